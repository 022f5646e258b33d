"""Which key press answers an approval prompt: the card's own keys only.

An approval card appears while the person may be typing (the next prompt, a steer), so nothing
typed in the prompt box answers it: not a key typed before it appeared, not one in the flow of
typing, and not a word that merely begins with y, a or n ("no thanks, instead...", "yes" in
the middle of a sentence) typed after a pause into an empty box. What is typed there stays
there. A card is answered by:

- its buttons (a click, or Enter on the one that has the focus);
- its own y / a / n while it has the focus (moved there on purpose: Shift+Tab from the prompt
  box goes straight to the waiting card, past anything else that takes the focus), once
  :data:`ANSWER_PAUSE_S` passed since it appeared
  (:class:`~desk.widgets.approval_prompt.ApprovalPrompt`);
- a modifier chord, at any time: Alt+y (allow once), Alt+a (allow always), Alt+n (deny), but
  only while Esc is not the stop key (:func:`chords_answer`). A terminal sends Alt+y as ESC y,
  the very bytes of Esc then ``y``; on a busy machine the two keys come in one read, so while
  Esc stops, ESC and a letter are always Esc then the letter (:mod:`desk.escape_split`), and a
  person who pressed Esc then typed "y" has stopped the turn, never allowed the call.
"""

from __future__ import annotations

from typing import Literal

Decision = Literal["once", "always", "deny"]
"""An answer to an approval prompt."""

ANSWER_PAUSE_S = 0.3
"""The card's own keys answer only this long (s) after it appeared."""

CHORD_KEYS: dict[str, Decision] = {"alt+y": "once", "alt+a": "always", "alt+n": "deny"}
"""Keys that answer at any time, while Esc is not the stop key (:func:`chords_answer`)."""

CARD_FOCUS_KEY = "shift+tab"
"""In the prompt box while an approval waits: moves the focus straight to its card."""

KEY_HINT = "Shift+Tab to the card, then y / a / n"
"""What the card says about its keys (Esc is the stop key: no chord answers)."""

KEY_HINT_CHORDS = "Shift+Tab to the card, then y / a / n · Alt+y / Alt+a / Alt+n at any time"
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


class ApprovalKeys:
    """Whether a key pressed in the prompt box answers an approval: an Alt chord, while they
    answer; never a plain key (it is typed).

    Args:
        chords: True when the Alt chords answer (:func:`chords_answer`).
    """

    def __init__(self, *, chords: bool = False) -> None:
        self.chords = chords
        """True when the Alt chords answer (Esc is not the stop key)."""

    def answer(self, key: str) -> Decision | None:
        """The answer a key pressed in the prompt box gives, or None when it is typing.

        Args:
            key: the key (``y``, ``alt+y``...).
        """
        return CHORD_KEYS.get(key) if self.chords else None
