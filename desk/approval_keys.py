"""Which key press answers an approval prompt: deliberate ones only.

An approval card appears while the person may be typing (the next prompt, a steer), so a key
typed before it appeared, or in the flow of typing, must never answer it: keep typing while a
tool call arrives and " yna" once read as "allowed once". A key answers when it is deliberate
(the rule Codex and Claude Code follow, with their own keys):

- a plain ``y`` / ``a`` / ``n`` typed at least :data:`ANSWER_PAUSE_S` after the card appeared
  and after the key before it, while the prompt box is empty (otherwise it is typed there);
- a modifier chord, at any time: Alt+y (allow once), Alt+a (allow always), Alt+n (deny), but
  only while Esc is not the stop key (:func:`chords_answer`). A terminal sends Alt+y as ESC y,
  the very bytes of Esc then ``y``; on a busy machine the two keys come in one read, so while
  Esc stops, ESC and a letter are always Esc then the letter (:mod:`desk.escape_split`), and a
  person who pressed Esc then typed "y" has stopped the turn, never allowed the call.

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
"""Keys that answer at any time, while Esc is not the stop key (:func:`chords_answer`)."""

KEY_HINT = "y / a / n after a pause, with the prompt box empty"
"""What the card says about its keys (Esc is the stop key: no chord answers)."""

KEY_HINT_CHORDS = (
    "y / a / n after a pause, with the prompt box empty · Alt+y / Alt+a / Alt+n at any time"
)
"""What the card says about its keys when the chords answer too."""

ESCAPE = "escape"
"""The Esc key's name."""


def chords_answer(stop_keys: frozenset[str]) -> bool:
    """True when Alt+y / Alt+a / Alt+n answer an approval: only while Esc stops nothing.

    Args:
        stop_keys: every key that stops (the stop key and Ctrl+C, as
            :attr:`desk.stop_key.StopKey.keys` gives them).
    """
    return ESCAPE not in stop_keys


def chord_keys(stop_keys: frozenset[str]) -> frozenset[str]:
    """The Alt chords that answer with these stop keys (none while Esc stops): the input
    thread keeps ESC and their letter together as the chord only for these."""
    return frozenset(CHORD_KEYS) if chords_answer(stop_keys) else frozenset()


def key_hint(chords: bool) -> str:
    """What the card says about its keys: :data:`KEY_HINT_CHORDS` when ``chords`` answer."""
    return KEY_HINT_CHORDS if chords else KEY_HINT


KEPT_KEYS = 32
"""Key times remembered (enough for any key the UI has not handled yet)."""


class ApprovalKeys:
    """The typing rhythm, and whether a key press is a deliberate answer. UI thread only.

    Args:
        pause_s: the pause a plain key needs, in seconds.
        chords: True when the Alt chords answer (:func:`chords_answer`).
    """

    def __init__(self, pause_s: float = ANSWER_PAUSE_S, *, chords: bool = False) -> None:
        self.pause_s = pause_s
        """The pause a plain key needs, in seconds."""
        self.chords = chords
        """True when the Alt chords answer (Esc is not the stop key)."""
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
            return CHORD_KEYS[key] if self.chords else None
        decision = PLAIN_KEYS.get(key)
        if decision is None or not box_empty or not self.armed(shown_at, at):
            return None
        before = [t for t in self._times if t < at]
        if before and at - max(before) < self.pause_s:
            return None  # in the flow of typing
        return decision
