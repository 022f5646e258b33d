"""A key that must be pressed twice within a window to act (Ctrl+C to quit)."""

from __future__ import annotations

QUIT_WINDOW_S = 2.0
"""Seconds within which a second Ctrl+C quits."""


class DoublePress:
    """Tells whether a press is the second one within ``window_s`` seconds of the first.

    Times come from the caller's clock (seconds), so tests inject them.

    Args:
        window_s: the window in seconds.
    """

    def __init__(self, window_s: float = QUIT_WINDOW_S) -> None:
        self.window_s = window_s
        """The window in seconds."""
        self._first: float | None = None

    def press(self, now: float) -> bool:
        """Record a press at ``now``; True when it confirms a press less than the window ago.

        A confirming press resets the state; a press after the window starts a new one.
        """
        if self._first is not None and 0.0 <= now - self._first <= self.window_s:
            self._first = None
            return True
        self._first = now
        return False

    def reset(self) -> None:
        """Forget a pending first press."""
        self._first = None
