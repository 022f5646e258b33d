"""The stop key: which key stops the running turn, once or pressed twice, and its press clock.

``stop_key`` in ``config.toml`` names it: a Textual key name (``"escape"``, the default;
``"ctrl+g"``, ``"f9"``...), or ``"escape escape"`` for a double press: the second press within
:data:`DOUBLE_PRESS_S` stops, the first goes on to the app as an ordinary key (it closes a
list or a panel), as Codex users asked for who press Esc out of habit. Ctrl+C always stops
too, with a single press.

:class:`StopPresses` decides whether one press is a stop; the terminal's input thread and the
UI thread each keep one (a press the input thread let through reaches the UI's).

"Enter, Esc" typed faster than the UI handles the Enter is the gateway's to sort out: each
key carries its own time, and the gateway stops the prompt entered before the key whichever
call reaches it first (:mod:`tui_gateway.stops.key_stops`).
"""

from __future__ import annotations

from dataclasses import dataclass

from agent.stops import YOU_STOPPED, Issuer, StopRequest, Surface
from tui_gateway.settings.resolution import DEFAULT_STOP_KEY, parse_stop_key

DOUBLE_PRESS_S = 0.5
"""Longest time between the two presses of a double stop key, in seconds."""

ALWAYS_STOP_KEYS = frozenset({"ctrl+c"})
"""Keys that stop with one press whatever ``stop_key`` says."""


@dataclass(frozen=True, slots=True)
class StopKey:
    """Which key stops, and whether it takes two presses.

    Attributes:
        key: a Textual key name (``escape``, ``ctrl+g``...).
        double: True when two presses within ``window_s`` are needed.
        window_s: the double press's window, in seconds.
    """

    key: str = DEFAULT_STOP_KEY
    double: bool = False
    window_s: float = DOUBLE_PRESS_S

    @classmethod
    def parse(cls, text: str) -> StopKey:
        """``"escape"``, ``"ctrl+g"``, ``"escape escape"`` (a double press)...

        The grammar is the setting's (:func:`tui_gateway.settings.resolution.parse_stop_key`).

        Raises:
            ValueError: not one key name, or one name twice (one line saying what is taken).
        """
        key, double = parse_stop_key(text)
        return cls(key, double=double)

    @property
    def label(self) -> str:
        """How help and the footer name it: ``Esc``, ``Esc Esc``, ``^g``."""
        name = {"escape": "Esc"}.get(self.key, self.key.replace("ctrl+", "^"))
        return f"{name} {name}" if self.double else name

    @property
    def keys(self) -> frozenset[str]:
        """Every key that may stop (the stop key and Ctrl+C)."""
        return frozenset({self.key}) | ALWAYS_STOP_KEYS


class StopPresses:
    """Counts presses of the stop key to say which one is a stop (one thread per instance).

    Args:
        stop_key: the configured stop key.
    """

    def __init__(self, stop_key: StopKey) -> None:
        self.stop_key = stop_key
        """The configured stop key."""
        self._first_at: float | None = None

    def press(self, key: str, at: float) -> bool:
        """A press of ``key`` at ``at`` (``time.monotonic()`` seconds): is it a stop?

        Returns:
            True for Ctrl+C, for the stop key, or for the second press of a double stop key
            within its window; False for any other key and for a double key's first press.
        """
        if key in ALWAYS_STOP_KEYS:
            return True
        stop_key = self.stop_key
        if key != stop_key.key:
            return False
        if not stop_key.double:
            return True
        first, self._first_at = self._first_at, at
        if first is not None and 0.0 <= at - first <= stop_key.window_s:
            self._first_at = None
            return True
        return False


def key_stop(read_at: float, surface: Surface = Surface.DESK_KEY) -> StopRequest:
    """The person's stop for a key read at ``read_at`` (``time.monotonic()`` seconds): its
    receipt's figures count from that moment, not from when the gateway got it."""
    return StopRequest(
        issuer=Issuer.USER, surface=surface, reason=YOU_STOPPED, requested_at=read_at
    )
