"""The stop keys: the stop key (Esc by default, see :mod:`desk.stop_key`) and Ctrl+C.

A stop key is acted on from two threads. In a real terminal the input thread offers it first
(:meth:`StopKeysController.from_input_thread`, see :mod:`desk.driver`), before the key even
reaches the UI's queue, which may be seconds behind a fast stream: the stop goes to the gateway
right there. What the input thread lets through (nothing ran, or the first press of a double
stop key) reaches the app's bindings on the UI thread (:meth:`StopKeysController.stop_key`,
:meth:`StopKeysController.ctrl_c`), as every key does under Pilot.

Either way the stop's ``requested_at`` is the moment the key's bytes were read (or, without
the terminal's stamp, the key event's own time): the stop receipt's figures count from there.

A stop key means "stop this session's work", and the gateway decides what that is: the key
names no turn, and carries its own time (``keyed_at``, the key event's ``Message.time``), as
every Enter's submit carries its own (``entered_at``). The gateway stops what runs, or, when
nothing runs yet, the prompt of an Enter made before the key when its submit arrives (the UI
may not have sent it yet); never a prompt entered after the key
(:mod:`tui_gateway.stops.key_stops`). Each key reaches the gateway once: one the input thread sent
goes on to the app only for its other uses (closing a list, a panel). A key read after quitting
began stops nothing: the quit stops everything as the system.

A stop the input thread sent is announced to the UI (``stopped_from_input_thread``, with the key)
through the app's queue, where it comes before every key read after the stop key: the approvals
on screen stop taking answers before those keys are handled (:meth:`ToolCallsController.stopping
<desk.controllers.tool_calls.ToolCallsController.stopping>`), and the help screen, which that key
also closes (Esc), closes (:func:`desk.controllers.help.close_help_on_stop`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agent.stamps import stamp
from agent.stops import Surface
from contract.errors import GatewayError
from desk.controllers.console import ConsoleController
from desk.controllers.quit import QuitController
from desk.controllers.sessions import SessionsController
from desk.controllers.turns import TurnsController
from desk.stop_key import StopKey, StopPresses, key_stop

if TYPE_CHECKING:
    from contract.ports import DeskGateway

PASSED_KEY_S = 1.0
"""A key event made at most this long (s) after the input thread let a stop key through is
that key (when the event's own time is not known)."""


@dataclass(frozen=True, slots=True)
class PassedKey:
    """A stop key the input thread let through to the app.

    Attributes:
        read_at: ``time.monotonic()`` when its bytes were read.
        key_time: the key event's time (``Message.time``), or None.
        sent: True when the input thread gave it to the gateway already (nothing ran: the
            gateway keeps it for a prompt in flight); the app must not send it again.
    """

    read_at: float
    key_time: float | None
    sent: bool


class StopKeysController:
    """Where the stop keys go.

    Args:
        gateway: the gateway (``session_interrupt``).
        stop_key: the configured stop key.
        turns: sends the stops.
        console: a focused console takes the stop keys for its commands; a key that stopped
            no turn cancels the commands that run, wherever the focus is.
        sessions: the view shown.
        quit: no stop once quitting began; Ctrl+C's double press quits.
        stopped_from_input_thread: called on the input thread with the key (``escape``,
            ``ctrl+c``...) once it sent a stop of a turn; must be thread-safe and ask the UI
            for what follows through the app's queue.
        popup_takes: whether the screen on top takes the key itself (Esc closes the command
            palette and the delete confirmation): then it is no stop; called on either thread.
        clear_prompt: Ctrl+C with nothing running: empties the prompt box when it holds text
            (Up recalls it), as a shell's Ctrl+C drops the line; True when it did (the press
            then counts for no quit). UI thread.
        after_typed: runs a callback once the keys typed before the key handled now are in
            the prompt box (its own queue): what Ctrl+C does then depends on what they typed.
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
        stopped_from_input_thread: Callable[[str], object] = lambda key: None,
        popup_takes: Callable[[str], bool] = lambda key: False,
        clear_prompt: Callable[[], bool] = lambda: False,
        after_typed: Callable[[Callable[[], None]], object] = lambda then: then(),
    ) -> None:
        self._gateway = gateway
        self._popup_takes = popup_takes
        self._clear_prompt = clear_prompt
        self._after_typed = after_typed
        self._stopped_from_input_thread = stopped_from_input_thread
        self.stop_key = stop_key
        """The configured stop key."""
        self._turns = turns
        self._console = console
        self._sessions = sessions
        self._quit = quit
        self._input_presses = StopPresses(stop_key)  # the terminal's input thread's
        self._ui_presses = StopPresses(stop_key)  # the UI thread's
        self._passed: PassedKey | None = None  # a stop key the input thread let through
        self._early: list[tuple[float, float]] = []  # (read_at, keyed_at) before the view
        self.key_time: float | None = None
        """The time (``Message.time``) of the key event the UI handles now (the app sets it)."""

    @property
    def input_keys(self) -> frozenset[str]:
        """The keys the input thread offers: the stop key and Ctrl+C."""
        return self.stop_key.keys

    # -- the terminal's input thread -----------------------------------------------------------

    def from_input_thread(self, key: str, read_at: float, key_time: float | None) -> bool:
        """A stop key on the input thread (thread-safe: attribute reads and gateway calls).

        It asks the gateway to stop what the session runs now (the key names no turn: the
        view may be behind). When nothing runs yet, the gateway keeps the stop for the prompt
        of an Enter made before the key, and the key goes on to the app for its other uses.

        Args:
            key: one of :attr:`input_keys`.
            read_at: ``time.monotonic()`` when its bytes were read.
            key_time: the key event's time, or None for now.

        Returns:
            True when the key was taken (a stop, or quitting began: it does nothing); False
            to let it go on.
        """
        stamp("key.stop_read", f"{read_at:.6f}")  # for benchmarks: when the bytes were read
        if self._quit.started:  # the quit stops everything as the system: the key does nothing
            return True
        if self._popup_takes(key):  # Esc closes the command palette: it is not a stop there
            return False
        if not self._input_presses.press(key, read_at):  # a double stop key's first press
            self._passed = PassedKey(read_at, key_time, sent=False)
            return False
        keyed_at = time.monotonic() if key_time is None else key_time
        if self._console.stop_from_input_thread(read_at, keyed_at):  # a focused console's
            return True
        view = self._sessions.view
        if view is None:  # the desk is starting: it stops what Enter sent meanwhile, once up
            self._early.append((read_at, keyed_at))
            self._passed = PassedKey(read_at, key_time, sent=True)
            return False
        try:
            stopped = self._gateway.session_interrupt(
                view.session_id, key_stop(read_at), keyed_at=keyed_at
            )
        except GatewayError:  # the session is gone (deleted, evicted): nothing to stop
            return False
        if stopped is not None:
            self._turns.stop_sent(stopped)
            self._stopped_from_input_thread(key)  # ahead of the keys read after this one
            return True
        if self._console.cancel_running(read_at):  # no turn ran: the commands that run
            return True
        self._console.stop_key_missed(read_at, keyed_at)  # for a command typed before it
        self._passed = PassedKey(read_at, key_time, sent=True)
        return False

    # -- the UI thread -------------------------------------------------------------------------

    def _key(self) -> tuple[float, float, bool]:
        """The key the UI handles now: when it was read, its own time, and whether the
        input thread sent it to the gateway already."""
        passed, self._passed = self._passed, None
        key_time = self.key_time
        if key_time is None:
            now = time.monotonic()
            return (now, now, False) if passed is None else (passed.read_at, now, passed.sent)
        if passed is None:
            return key_time, key_time, False
        if passed.key_time is not None:
            if passed.key_time == key_time:
                return passed.read_at, key_time, passed.sent
            return key_time, key_time, False
        if 0.0 <= key_time - passed.read_at <= PASSED_KEY_S:
            return passed.read_at, key_time, passed.sent
        return key_time, key_time, False

    def stop_key_pressed(self) -> bool:
        """The stop key's binding ran: stop what runs.

        Returns:
            False to let the key go on (the first press of a double key, nothing ran, or the
            input thread gave it to the gateway already).
        """
        read_at, keyed_at, sent = self._key()
        if self._quit.started:
            return True
        if self._popup_takes(self.stop_key.key):
            return False
        if not self._ui_presses.press(self.stop_key.key, read_at):
            return False
        view = self._sessions.view
        if self._console.takes_stop_key(read_at, keyed_at):  # a focused console: its commands
            return True
        if view is None and not sent:
            self._early.append((read_at, keyed_at))
        if view is None:
            return False
        if not sent and self._turns.stop(view, Surface.DESK_KEY, read_at, keyed_at) is not None:
            return True
        if self._console.cancel_running(read_at):  # no turn ran: the commands that run
            return True
        self._console.stop_key_missed(read_at, keyed_at)  # for a command typed before it
        return False

    def console_enter(self, key_time: float) -> None:
        """An Enter reached the app while the console's command line has the focus (UI thread,
        before the keys after it are handled): a stop key after it is for its command
        (:meth:`ConsoleController.enter_given`)."""
        self._console.enter_given(key_time)

    def send_early(self, session_id: str) -> None:
        """The desk is up, and the prompts Enter sent while it started went to the gateway:
        send the stop keys pressed meanwhile, each with its own time, so that a key pressed
        after an Enter stops that Enter's prompt (and never one entered after the key)."""
        early, self._early = self._early, []
        for read_at, keyed_at in early:
            try:
                stopped = self._gateway.session_interrupt(
                    session_id, key_stop(read_at), keyed_at=keyed_at
                )
            except GatewayError:
                return
            if stopped is not None:
                self._turns.stop_sent(stopped)

    def ctrl_c_pressed(self) -> None:
        """Ctrl+C: stop what runs; when nothing does, once the keys typed before it are in the
        prompt box, empty it if it holds text, else quit on a second press within 2 s."""
        read_at, keyed_at, sent = self._key()
        if self._quit.started:
            return
        if self._console.takes_stop_key(read_at, keyed_at):
            return
        view = self._sessions.view
        if (
            view is not None
            and not sent
            and self._turns.stop(view, Surface.DESK_KEY, read_at, keyed_at) is not None
        ):
            return
        if self._console.cancel_running(read_at):  # no turn ran: the commands that run
            return
        self._console.stop_key_missed(read_at, keyed_at)  # for a command typed before it
        self._after_typed(self._nothing_ran)

    def _nothing_ran(self) -> None:
        """Ctrl+C stopped nothing: the line typed is dropped first, as in a shell; on an
        empty box a second press within 2 s quits."""
        if not self._clear_prompt() and self._quit.confirm_ctrl_c():
            self._quit.begin(typed=True)
