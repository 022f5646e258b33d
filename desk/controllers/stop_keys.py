"""The stop keys: the stop key (Esc by default, see :mod:`desk.stop_key`) and Ctrl+C.

A stop key is acted on from two threads. In a real terminal the input thread offers it first
(:meth:`StopKeysController.from_input_thread`, see :mod:`desk.driver`), before the key even
reaches the UI's queue, which may be seconds behind a fast stream: the stop goes to the gateway
right there. What the input thread lets through (nothing ran, or the first press of a double
stop key) reaches the app's bindings on the UI thread (:meth:`StopKeysController.stop_key`,
:meth:`StopKeysController.ctrl_c`), as every key does under Pilot.

Either way the stop's ``requested_at`` is the moment the key's bytes were read (or, without
the terminal's stamp, the key event's own time): the stop receipt's figures count from there.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from agent.stops import Surface
from desk.controllers.console import ConsoleController
from desk.controllers.quit import QuitController
from desk.controllers.sessions import SessionsController
from desk.controllers.turns import TurnsController
from desk.stop_key import StopKey, StopPresses, key_stop
from tui_gateway.types import GatewayError

if TYPE_CHECKING:
    from desk.ports import DeskGateway

PASSED_KEY_S = 1.0
"""A key event made at most this long (s) after the input thread let a stop key through is
that key."""


class StopKeysController:
    """Where the stop keys go.

    Args:
        gateway: the gateway (``session_interrupt``).
        stop_key: the configured stop key.
        turns: stops the shown turn, keeps an early stop for the next submit.
        console: a focused console takes the stop keys for its commands.
        sessions: the view shown.
        quit: no stop once quitting began; Ctrl+C's double press quits.
        running_turn_of: the turn of a session whose ``message.start`` came and whose
            ``message.complete`` did not (the bridge knows, on the gateway's thread).
    """

    def __init__(
        self,
        gateway: DeskGateway,
        *,
        stop_key: StopKey,
        turns: TurnsController,
        console: ConsoleController,
        sessions: SessionsController,
        quit: QuitController,
        running_turn_of: Callable[[str], str | None],
    ) -> None:
        self._gateway = gateway
        self.stop_key = stop_key
        """The configured stop key."""
        self._turns = turns
        self._console = console
        self._sessions = sessions
        self._quit = quit
        self._running_turn_of = running_turn_of
        self._input_presses = StopPresses(stop_key)  # the terminal's input thread's
        self._ui_presses = StopPresses(stop_key)  # the UI thread's
        self._passed_read_at: float | None = None  # a stop key the input thread let through
        self.key_time: float | None = None
        """The time (``Message.time``) of the key event the UI handles now (the app sets it)."""

    @property
    def input_keys(self) -> frozenset[str]:
        """The keys the input thread offers: the stop key and Ctrl+C."""
        return self.stop_key.keys

    # -- the terminal's input thread -----------------------------------------------------------

    def from_input_thread(self, key: str, read_at: float, key_time: float | None) -> bool:
        """A stop key on the input thread (thread-safe: attribute reads and gateway calls).

        It stops the turn the view shows as running, or, when the view shows none yet (the
        UI is behind, or has not handled the Enter), whatever runs in the session now: the
        gateway knows. When nothing runs, the stop is kept for the prompt whose Enter came
        just before the key (:class:`desk.stop_key.EarlyStop`) and the key goes on.

        Args:
            key: one of :attr:`input_keys`.
            read_at: ``time.monotonic()`` when its bytes were read.
            key_time: the key event's time, or None for now.

        Returns:
            True when the key was taken as a stop (consumed); False to let it go on.
        """
        if not self._input_presses.press(key, read_at):  # a double stop key's first press
            self._passed_read_at = read_at
            return False
        if self._console.stop_from_input_thread(read_at):  # a focused console: its commands
            return True
        view = self._sessions.view
        if view is None or self._quit.started:
            return False
        stop = key_stop(read_at)
        shown = view.running_turn or self._running_turn_of(view.session_id)
        try:
            stopped = self._gateway.session_interrupt(view.session_id, stop, turn_id=shown)
        except GatewayError:  # the session is gone (deleted, evicted): nothing to stop
            return False
        if stopped is not None or shown is not None:  # stopped, or what was shown had ended
            return True
        self._turns.early_stop.arm(stop, time.monotonic() if key_time is None else key_time)
        self._passed_read_at = read_at
        return False

    # -- the UI thread -------------------------------------------------------------------------

    def _read_at(self) -> float:
        read_at, self._passed_read_at = self._passed_read_at, None
        key_time = self.key_time
        if key_time is None:
            return time.monotonic() if read_at is None else read_at
        if read_at is not None and 0.0 <= key_time - read_at <= PASSED_KEY_S:
            return read_at
        return key_time

    def stop_key_pressed(self) -> bool:
        """The stop key's binding ran: stop what runs.

        Returns:
            False to let the key go on (the first press of a double key, or nothing ran).
        """
        read_at = self._read_at()
        if not self._ui_presses.press(self.stop_key.key, read_at):
            return False
        view = self._sessions.view
        if self._console.takes_stop_key(read_at):  # a focused console: its commands
            return True
        return view is not None and self._turns.stop(view, Surface.DESK_KEY, read_at) is not None

    def ctrl_c_pressed(self) -> bool:
        """Ctrl+C: stop what runs; when nothing does, True once a second press should quit."""
        read_at = self._read_at()
        if self._console.takes_stop_key(read_at):
            return False
        view = self._sessions.view
        if view is not None and self._turns.stop(view, Surface.DESK_KEY, read_at) is not None:
            return False
        return self._quit.confirm_ctrl_c()
