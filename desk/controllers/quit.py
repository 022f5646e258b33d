"""Quitting: a system stop of everything through ``gateway.shutdown()``, then exit.

Ctrl+Q, SIGTERM / SIGHUP, a terminal that hung up and a second Ctrl+C with nothing running all
start the same quit (:meth:`QuitController.begin`; Ctrl+Q starts it on the terminal's input
thread already, :meth:`QuitController.begin_from_input_thread`): the gateway's shutdown runs on
a plain thread (:class:`desk.shutdown.ShutdownRunner`), the status bar says how many turns it
stops, and the app exits once the shutdown returned, first saying so when its bound expired.
Textual is never relied on to end a turn: when the app ends any other way,
:meth:`QuitController.backstop` shuts the gateway down on the way out. A browser that went
away (``desk web``: the tab closed, the connection lost) starts it too, first stopping the
running turns as ``web.disconnect`` (:mod:`desk.web_driver`).
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from textual.message import Message

from agent.stamps import stamp
from agent.stops import Surface
from contract.results import ShutdownReport
from desk.controllers.ports import SetTimer
from desk.double_press import DoublePress
from desk.shutdown import ShutdownRunner, install_quit_signals, remove_quit_signals, shutdown_note
from desk.typing_drain import DRAIN_S, DrainTyping
from desk.widgets.prompt_input import PromptInput
from desk.widgets.status_bar import Clock, StatusBar

if TYPE_CHECKING:
    from contract.ports import DeskGateway

BUILD_POLL_S = 0.1
"""How often a quit typed while the desk starts looks whether it is ready, in seconds."""

START_WAIT_S = 60.0
"""The longest a quit typed while the desk starts waits for it to be ready, in seconds."""

EXIT_NOTE_S = 1.5
"""How long the "gave up waiting" note stays on screen before the desk exits, in seconds."""

QUIT_HINT = "press Ctrl+C again to quit"
"""The status bar's notice after a first Ctrl+C with nothing running."""

DEFAULT_SHUTDOWN_BOUND_S = 10.0
"""The shutdown's bound assumed when the gateway does not say (its own default), in seconds."""

EXTRA_WAIT_S = 5.0
"""How much longer than the gateway's bound the app waits for a quit under way, in seconds."""


def stopping_notice(turns: int, servers: int = 0) -> str:
    """The status bar while a quit waits for ``turns`` running turns and ``servers`` MCP
    servers, e.g. ``"■ stopping 1 turn, 2 MCP servers…"``; ``"quitting…"`` when for none."""
    parts = []
    if turns:
        parts.append(f"{turns} turn" if turns == 1 else f"{turns} turns")
    if servers:
        parts.append(f"{servers} MCP server" if servers == 1 else f"{servers} MCP servers")
    return f"■ stopping {', '.join(parts)}…" if parts else "quitting…"


def shutdown_bound_s(gateway: DeskGateway) -> float:
    """How long the gateway's shutdown waits for workers, in seconds (from its config)."""
    config = getattr(gateway, "config", None)
    return float(getattr(config, "shutdown_timeout_s", DEFAULT_SHUTDOWN_BOUND_S))


class QuitController:
    """One quit, however it starts.

    Args:
        gateway: the gateway to shut down.
        status: the status bar (what the quit waits for, the Ctrl+C hint, the bound's note).
        prompt: the prompt box (disabled once a quit began).
        clock: the clock of the Ctrl+C double press.
        set_timer: runs a callback after a delay.
        exit: ends the app with an exit code.
        shutdown_finished: called on the quit thread once the shutdown returned.
        began: called once a quit begins, on the thread that began it (the stream is no
            longer drawn).
        servers: how many MCP servers run now (the quit ends them too).
        post: posts a message to the app (thread-safe): the drain of the keys typed before
            a quit (:mod:`desk.typing_drain`).
        starting: True while the desk is not ready for prompts yet (thread-safe): a quit
            then waits for it to be (up to :data:`START_WAIT_S`), and for the prompts sent
            meanwhile to go before the shutdown begins (they are then stopped by it, or saved
            as not sent).
    """

    def __init__(
        self,
        gateway: DeskGateway,
        *,
        status: StatusBar,
        prompt: PromptInput,
        clock: Clock,
        set_timer: SetTimer,
        exit: Callable[[int], None],
        shutdown_finished: Callable[[], None],
        began: Callable[[], None] = lambda: None,
        servers: Callable[[], int] = lambda: 0,
        post: Callable[[Message], object] = lambda _message: None,
        starting: Callable[[], bool] = lambda: False,
    ) -> None:
        self._gateway = gateway
        self._status = status
        self._prompt = prompt
        self._clock = clock
        self._set_timer = set_timer
        self._exit = exit
        self._shutdown_finished = shutdown_finished
        self._began = began
        self._servers = servers
        self._post = post
        self._starting = starting
        self._drained: threading.Event | None = None  # set once the typing before it is in
        self._turns = 0  # the turns the quit waits for, as last said
        self._runner = ShutdownRunner(gateway)
        self._ctrl_c = DoublePress()
        self._shown = False  # begin() ran: the status bar says what the quit waits for
        self._signals: list[signal.Signals] = []
        self.exit_note = ""
        """Set when a quit gave up waiting for workers (``desk`` prints it after exiting)."""
        self.exit_note_s = EXIT_NOTE_S
        """Seconds that note stays on screen before the desk exits."""

    @property
    def started(self) -> bool:
        """True once a quit has begun (read by the terminal's input thread too)."""
        return self._runner.started

    @property
    def takes_prompts(self) -> bool:
        """True until the gateway's shutdown begins: a prompt typed before the quit still
        goes (it is then stopped by the quit, or saved as not sent)."""
        return not self._runner.shutting_down

    @property
    def report(self) -> ShutdownReport | None:
        """What the gateway's shutdown did, once it returned."""
        return self._runner.report

    def install_signals(self) -> None:
        """Handle SIGTERM and SIGHUP as a quit (call on the UI thread's loop)."""
        self._signals = install_quit_signals(lambda _sig: self.begin())

    def begin(self, gone: Surface | None = None, *, typed: bool = False) -> None:
        """Start the quit (once): stop every turn as the system, then exit. On the UI thread;
        when :meth:`begin_from_input_thread` started it already, this shows it.

        Args:
            gone: the frontend went away (a closed browser tab: ``web.disconnect``): the
                running turns are stopped from that system surface first.
            typed: a key started it (Ctrl+Q): what was typed before it is sent first.
        """
        if self._shown:
            return
        self._shown = True
        self._began()
        self._turns = self._gateway.running_turns
        self._status.notice = stopping_notice(self._turns, self._servers())
        before = self._drain() if typed and not self._runner.started else None
        if self._drained is None:  # else once the typing before the quit is in
            self._prompt.disabled = True
        self._runner.start(then=self._shutdown_finished, gone=gone, before=before)

    def begin_from_input_thread(self, typing: bool = False) -> bool:
        """Ctrl+Q as the terminal's input thread reads it: the gateway's shutdown starts there
        and then, not once the UI thread, busy drawing a stream, gets to the key (0.5 s and
        more on a busy machine). The key then goes on to the app, whose :meth:`begin` shows
        the quit. When keys typed before it have not reached the app yet (``typing``), the
        shutdown first waits, bounded, for what they send (:mod:`desk.typing_drain`).
        Thread-safe.

        Returns:
            True when this started the shutdown.
        """
        stamp("quit.key_read")
        self._began()
        typing = typing or self._starting()  # an Enter typed during the start may be in flight
        before = self._drain() if typing and not self._runner.started else None
        return self._runner.start(then=self._shutdown_finished, before=before)

    def _drain(self) -> Callable[[], None]:
        """Send a :class:`DrainTyping` after the keys; the wait for it, for the quit thread:
        :data:`DRAIN_S`, or while the desk starts (up to :data:`START_WAIT_S`: the shutdown
        waits for the gateway's build anyway) and that long after."""
        done = self._drained = threading.Event()
        self._post(DrainTyping(done))

        def wait() -> None:
            give_up = time.monotonic() + START_WAIT_S
            while self._starting() and not done.wait(BUILD_POLL_S):
                if time.monotonic() > give_up:
                    break  # the desk never came up: the shutdown goes ahead
            if done.wait(DRAIN_S):
                stamp("quit.typing_in")

        return wait

    def typing_in(self) -> None:
        """The keys typed before the quit were handled (on the UI thread): the prompt box
        takes no more."""
        if self._drained is not None:
            self._drained.set()
        if self._shown:
            self._prompt.disabled = True

    def gateway_stopping(self, turns: int) -> None:
        """``gateway.stopping``: say how many turns (and MCP servers) the shutdown waits for."""
        self._turns = turns
        self._status.notice = stopping_notice(turns, self._servers())

    def servers_changed(self) -> None:
        """An MCP server started or ended: during a quit, say what it still waits for."""
        if self._shown and not self.exit_note:
            self._status.notice = stopping_notice(self._turns, self._servers())

    def after_shutdown(self) -> None:
        """The gateway's shutdown returned: exit, first saying so if its bound expired."""
        note = shutdown_note(self._runner.report, shutdown_bound_s(self._gateway))
        if not note:
            self._exit(0)
            return
        self.exit_note = note
        self._status.notice = note
        self._set_timer(self.exit_note_s, lambda: self._exit(0))

    def wait_over(self) -> None:
        """Block until the quit's own thread is done (bounded by the shutdown's bound and
        :data:`EXTRA_WAIT_S`): by then it has ended the process, or handed the exit to the UI
        thread, which the caller is to go back to. For a UI thread that has handed the
        terminal to another program (the editor) and must not take it back meanwhile."""
        self._runner.join(shutdown_bound_s(self._gateway) + EXTRA_WAIT_S)

    def confirm_ctrl_c(self) -> bool:
        """Ctrl+C with nothing running: True on the second press within 2 s, else say so."""
        if self._ctrl_c.press(self._clock()):
            return True
        # In the status bar, not a toast: a toast covered the prompt box and the status bar.
        self._status.notice = QUIT_HINT
        self._set_timer(self._ctrl_c.window_s, self._clear_hint)
        return False

    def _clear_hint(self) -> None:
        if self._status.notice == QUIT_HINT:
            self._status.notice = ""

    def backstop(self) -> None:
        """On the way out, whatever ended the app: every turn ends and nothing leaks."""
        remove_quit_signals(self._signals)
        self._signals = []
        if self._runner.started:
            # A quit is under way: wait for the gateway (bounded by its own timeout), not for
            # the quit thread, which may still be handing the exit to the (now busy) UI loop.
            self._runner.wait(shutdown_bound_s(self._gateway) + EXTRA_WAIT_S)
        else:
            self._runner.run_here()
