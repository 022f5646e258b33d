"""When to compress automatically, and how long to wait after a failure."""

from __future__ import annotations

from dataclasses import dataclass

from agent.context.budget import largest_prompt

COOLDOWN_STEPS_S: tuple[float, ...] = (60.0, 300.0, 900.0)
"""Waits after the first, second and third (and later) failed compression in a row."""


@dataclass(frozen=True, slots=True)
class CooldownLadder:
    """The back-off after failed automatic compressions.

    Attributes:
        steps_s: the waits in seconds, the last one repeating.
    """

    steps_s: tuple[float, ...] = COOLDOWN_STEPS_S

    def next(self, step: int, now: float) -> tuple[float, int]:
        """After a failure at ``step`` failures so far: ``(until, step + 1)`` (unix seconds)."""
        wait = self.steps_s[min(step, len(self.steps_s) - 1)]
        return now + wait, step + 1


def should_compress(
    prompt_tokens: int,
    window_tokens: int,
    *,
    threshold: float = 0.75,
    cooldown_until: float | None = None,
    now: float = 0.0,
) -> bool:
    """True when an automatic compression is due.

    Args:
        prompt_tokens: the size the next request would have (tokens).
        window_tokens: the model's context window (tokens).
        threshold: the share of the window that triggers it.
        cooldown_until: unix seconds before which automatic compression waits, or None.
        now: unix seconds now.
    """
    if cooldown_until is not None and now < cooldown_until:
        return False
    return prompt_tokens >= threshold * window_tokens


AFTER_FRACTION = 0.5
"""Share of the window a compression aims to leave the next request at, when it can."""


def compression_target(
    window_tokens: int, extra_tokens: int, *, measured: bool, after_fraction: float = AFTER_FRACTION
) -> int:
    """The size the transcript should come down to (tokens).

    At most what still lets the next request fit (the transcript plus ``extra_tokens``, with
    the count's headroom and the reply's reserve); within that, ``after_fraction`` of the
    window, so the session has room to grow before the next compression, but never less than
    half of what fits.

    Args:
        window_tokens: the context window.
        extra_tokens: what the next request adds: its prompt and tool definitions (tokens).
        measured: whether the count is calibrated by the server.
        after_fraction: the share of the window to aim for.

    Returns:
        the target in tokens (0 when even an empty transcript would not fit).
    """
    limit = largest_prompt(window_tokens, measured=measured) - extra_tokens
    comfortable = int(window_tokens * after_fraction) - extra_tokens
    return max(0, min(limit, max(comfortable, limit // 2)))
