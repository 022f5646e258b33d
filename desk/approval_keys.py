"""Which key press answers an approval prompt: deliberate ones only.

An approval card appears while the person may be typing (the next prompt, a steer), so a key
typed before it appeared, or in the flow of typing, must never answer it: keep typing while a
tool call arrives and " yna" once read as "allowed once". A key answers when it is deliberate
(the rule Codex and Claude Code follow, with their own keys):

- a modifier chord, at any time: Alt+y (allow once), Alt+a (allow always), Alt+n (deny);
- a plain ``y`` / ``a`` / ``n`` typed at least :data:`ANSWER_PAUSE_S` after the card appeared
  and after the key before it, while the prompt box is empty (otherwise it is typed there).

Times are the key events' own (``Message.time``, ``time.monotonic()`` seconds: when the
terminal's bytes were read), so a key that waited in the UI's queue behind a long render still
counts from when it was typed.
"""

from __future__ import annotations

from collections import deque
from typing import Literal

Decision = Literal["once", "always", "deny"]
"""An answer to an approval prompt."""

ANSWER_PAUSE_S = 0.3
"""A plain key answers only this long (s) after the card appeared and after the key before it."""

PLAIN_KEYS: dict[str, Decision] = {"y": "once", "a": "always", "n": "deny"}
"""Keys that answer after a pause, with the prompt box empty."""

CHORD_KEYS: dict[str, Decision] = {"alt+y": "once", "alt+a": "always", "alt+n": "deny"}
"""Keys that answer at any time."""

KEY_HINT = "y / a / n after a pause, with the prompt box empty · Alt+y / Alt+a / Alt+n at any time"
"""What the card says about its keys."""

KEPT_KEYS = 32
"""Key times remembered (enough for any key the UI has not handled yet)."""


class ApprovalKeys:
    """The typing rhythm, and whether a key press is a deliberate answer. UI thread only.

    Args:
        pause_s: the pause a plain key needs, in seconds.
    """

    def __init__(self, pause_s: float = ANSWER_PAUSE_S) -> None:
        self.pause_s = pause_s
        """The pause a plain key needs, in seconds."""
        self._times: deque[float] = deque(maxlen=KEPT_KEYS)

    def key_arrived(self, at: float) -> None:
        """Note a key press made at ``at`` (every key, as it reaches the app)."""
        self._times.append(at)

    def armed(self, shown_at: float, at: float) -> bool:
        """True when a plain key made at ``at`` comes long enough after a card shown at
        ``shown_at``."""
        return at - shown_at >= self.pause_s

    def answer(self, key: str, at: float, shown_at: float, *, box_empty: bool) -> Decision | None:
        """The answer a key press gives, or None when it is ordinary typing.

        Args:
            key: the key (``y``, ``alt+y``...).
            at: when it was made (``Message.time``).
            shown_at: when the card appeared (``time.monotonic()``).
            box_empty: the prompt box holds no text.
        """
        if key in CHORD_KEYS:
            return CHORD_KEYS[key]
        decision = PLAIN_KEYS.get(key)
        if decision is None or not box_empty or not self.armed(shown_at, at):
            return None
        before = [t for t in self._times if t < at]
        if before and at - max(before) < self.pause_s:
            return None  # in the flow of typing
        return decision
