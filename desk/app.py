"""The desk app: a transcript, a prompt box, a Stop button and a status bar over one gateway.

The app speaks the gateway contract only. Prompts go in with ``prompt_submit``. Stops go in
with ``session_interrupt``, called directly (it only schedules a cancel, so it is fast and never
blocks): from the Esc / Ctrl+C bindings and the Stop button on the UI thread, and, in a real
terminal, from the input thread before the key even reaches the UI queue
(:meth:`DeskApp.stop_from_input_thread`, see :mod:`desk.driver`). Events come back as Textual
messages posted by :mod:`desk.bridge`. Quitting is a system stop: ``gateway.shutdown()`` runs on
a plain thread (:mod:`desk.shutdown`) and the app exits when it returns. Textual is never relied
on to end a turn.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from pathlib import Path
from typing import ClassVar

from textual import constants
from textual.actions import SkipAction
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.css.query import NoMatches
from textual.driver import Driver
from textual.message import Message
from textual.widgets import Button, Footer, Static

from agent.stops import StopRequest, Surface
from desk.app_extras import DeskExtras
from desk.banner import banner_text
from desk.bridge import GatewayBridge
from desk.config import ConnectionInfo
from desk.features import (
    CompressionFeature,
    ConsoleFeature,
    QueueFeature,
    SessionsFeature,
    ToolCallsFeature,
)
from desk.gc_tuning import tune_gc
from desk.messages import (
    GatewayIsStopping,
    PromptWasDropped,
    PromptWasQueued,
    ReplyDelta,
    TurnCompleted,
    TurnStarted,
    TurnStateChanged,
)
from desk.ports import DeskGateway
from desk.receipts import ReceiptFormatter, format_failure, format_stop_receipt
from desk.shutdown import ShutdownRunner, install_quit_signals, remove_quit_signals
from desk.slash import unknown_command
from desk.startup import Startup
from desk.user_config import config_path_shown
from desk.widgets import PromptInput, StatusBar, Transcript
from desk.widgets.compression_panel import CompressionPanel
from desk.widgets.console_panel import ConsolePanel
from desk.widgets.sessions_sidebar import SessionsSidebar
from desk.widgets.status_bar import Clock
from tui_gateway.events import MessageComplete
from tui_gateway.gateway import GatewayError, ShutdownReport

APP_CSS = Path(__file__).with_name("app.tcss")
"""The app's own layout CSS (widgets carry theirs in ``desk/widgets/*.tcss``)."""


class DeskApp(
    DeskExtras,
    ToolCallsFeature,
    ConsoleFeature,
    SessionsFeature,
    QueueFeature,
    CompressionFeature,
    App[int],
):
    """The desk (themes, help, palette, export and the context gauge: :mod:`desk.app_extras`).

    Args:
        gateway: the gateway turns run on (the app never creates one).
        connection: what to show about the model server.
        clock: the clock for the running turn's elapsed time.
        receipt_formatter: turns a stop receipt into the marker under a stopped turn.
        escape_delay_ms: if given, sets ``textual.constants.ESCAPE_DELAY`` (milliseconds a lone
            ESC byte waits before it is the Esc key).
        handle_signals: handle SIGTERM and SIGHUP as a system quit while the app runs.
    """

    CSS_PATH = APP_CSS
    TITLE = "desk"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "stop", "Stop", priority=True),
        Binding("ctrl+c", "stop_or_quit", "Stop / quit", show=False, priority=True),
        Binding("ctrl+q", "quit", "Quit", priority=True),
        Binding("f1", "help", "Help"),
        Binding("pageup", "page_transcript(-1)", "Scroll up", show=False, priority=True),
        Binding("pagedown", "page_transcript(1)", "Scroll down", show=False, priority=True),
    ]

    def __init__(
        self,
        gateway: DeskGateway,
        connection: ConnectionInfo,
        *,
        clock: Clock = time.monotonic,
        receipt_formatter: ReceiptFormatter = format_stop_receipt,
        escape_delay_ms: int | None = None,
        handle_signals: bool = True,
        startup: Startup | None = None,
    ) -> None:
        if escape_delay_ms is not None:
            # Final in Textual, but its parser reads it for every ESC, so setting it works.
            constants.ESCAPE_DELAY = escape_delay_ms / 1000.0  # type: ignore[misc]
        super().__init__()
        self.gateway = gateway
        """The gateway (injected)."""
        self.connection = connection
        """The model server shown."""
        self._clock = clock
        self._format_receipt = receipt_formatter
        self._handle_signals = handle_signals
        self._signals: list[signal.Signals] = []
        self._quit_runner = ShutdownRunner(gateway)
        self._bridge = GatewayBridge(gateway, self)
        self._session_id: str | None = None
        self._running_turn: str | None = None
        self._queued: set[str] = set()
        self.startup = startup or Startup()
        """Resume or new session, start-up notice (tools, console, sessions: desk.features)."""

    # -- set-up --------------------------------------------------------------------------------

    def get_driver_class(self) -> type[Driver]:
        """:class:`desk.driver.FastEscapeDriver` on Linux, else Textual's choice.

        Headless runs (tests) never use it: Textual picks its headless driver for them.
        """
        if constants.DRIVER is None and sys.platform.startswith("linux"):
            from desk.driver import FastEscapeDriver

            return FastEscapeDriver
        return super().get_driver_class()

    def compose(self) -> ComposeResult:
        with Transcript(id="transcript"):
            shown = config_path_shown(os.environ)
            yield Static(banner_text(self.connection, shown), classes="banner", markup=False)
        yield ConsolePanel(id="console")
        yield CompressionPanel(clock=self._clock, id="compression")
        with Horizontal(id="input-row"):
            yield PromptInput(
                id="prompt", placeholder="Ask anything · Enter sends · Ctrl+J new line"
            )
            yield Button("■ Stop", id="stop", variant="error", disabled=True, compact=True)
        yield StatusBar(self.connection, clock=self._clock, id="status")
        yield Footer()
        yield SessionsSidebar(id="sessions")

    def on_mount(self) -> None:
        self._bridge.start()
        self._session_id = self.open_first_session()  # new, or resumed (--resume)
        self.query_one(PromptInput).focus()
        if self._handle_signals:
            self._signals = install_quit_signals(self._on_quit_signal)
        self.call_after_refresh(tune_gc)  # once the first screen is built

    @property
    def session_id(self) -> str:
        """The session this desk shows (created on mount)."""
        if self._session_id is None:
            raise RuntimeError("the desk is not mounted yet")
        return self._session_id

    @property
    def running_turn(self) -> str | None:
        """The turn the desk shows as running, if any."""
        return self._running_turn

    @property
    def quitting(self) -> bool:
        """True once a quit has begun."""
        return self._quit_runner.started

    @property
    def shutdown_report(self) -> ShutdownReport | None:
        """What the gateway's shutdown did, once the app quit through it."""
        return self._quit_runner.report

    # -- widgets -------------------------------------------------------------------------------

    @property
    def transcript(self) -> Transcript:
        """The transcript widget."""
        return self.query_one("#transcript", Transcript)

    @property
    def status_bar(self) -> StatusBar:
        """The status bar widget."""
        return self.query_one("#status", StatusBar)

    def _set_running(self, turn_id: str | None) -> None:
        status = self.status_bar
        if turn_id is None:
            self._running_turn = None
            status.state = "idle"
            status.detail = ""
            status.started_at = None
        elif turn_id != self._running_turn:
            self._running_turn = turn_id
            status.state = "waiting"
            status.detail = ""
            status.started_at = self._clock()
        self.query_one("#stop", Button).disabled = turn_id is None
        self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Show Stop dimmed in the footer while nothing runs (Esc then reaches other widgets)."""
        if action == "stop" and self._running_turn is None:
            return None
        return True

    def _set_queued(self) -> None:
        self.status_bar.queued = len(self._queued)

    def action_page_transcript(self, direction: int) -> None:
        """PageUp / PageDown scroll the transcript while the prompt box keeps the focus."""
        transcript = self.transcript
        if direction < 0:
            transcript.release_anchor()  # stay where the person scrolled while text streams
            transcript.scroll_page_up(animate=False)
        else:
            transcript.scroll_page_down(animate=False)  # at the end the anchor comes back

    # -- prompts -------------------------------------------------------------------------------

    async def on_prompt_input_submitted(self, message: PromptInput.Submitted) -> None:
        """Send the prompt; while a turn runs the gateway queues it."""
        text = message.text.lstrip("\n").rstrip()  # stray blank lines around it mean nothing
        if not text or self.quitting or await self.handle_slash(text):
            return
        if await self.handle_compress_slash(text):
            return
        if self.run_slash_command(text):  # console commands and /stop
            return
        unknown = unknown_command(text)
        if unknown is not None:  # a mistyped command is never sent to the model
            await self.add_note(f"unknown command {unknown} — F1 lists the commands", error=True)
            return
        try:
            result = self.gateway.prompt_submit(self.session_id, text)
        except GatewayError as exc:
            self.notify(exc.message, title="Prompt not sent", severity="error")
            return
        self.query_one(PromptInput).clear()
        await self.transcript.add_prompt(result.turn_id, text, queued=result.queued)
        if result.queued:
            self._queued.add(result.turn_id)
            self._set_queued()
        else:
            self._set_running(result.turn_id)

    # -- stops ---------------------------------------------------------------------------------

    def _stop(self, surface: Surface) -> str | None:
        """Hard-stop the running turn as the person; returns its id, or None if none ran."""
        if self._session_id is None:
            return None
        stopped = self.gateway.session_interrupt(
            self._session_id, StopRequest.by_user(surface), turn_id=self._running_turn
        )
        if stopped is not None and stopped == self._running_turn:
            self.status_bar.state = "stopping"
        return stopped

    def stop_from_input_thread(self, key: str) -> bool:
        """Esc or Ctrl+C straight from the terminal's input thread (see :mod:`desk.driver`).

        Thread-safe: it reads two attributes and calls the gateway, which only schedules the
        cancel. The UI learns of the stop from the gateway's ``turn.state`` event.

        Args:
            key: ``escape`` or ``ctrl+c``.

        Returns:
            True when a running turn was stopped (the key is consumed); False to let the key
            reach the app's bindings as usual.
        """
        if self.console_stop_from_input_thread():  # the console has the focus: cancel its command
            return True
        session_id, turn_id = self._session_id, self._running_turn
        if session_id is None or turn_id is None or self._quit_runner.started:
            return False
        stop = StopRequest.by_user(Surface.DESK_KEY)
        return self.gateway.session_interrupt(session_id, stop, turn_id=turn_id) is not None

    class TerminalClosed(Message):
        """The terminal hung up (posted from the input thread)."""

    def terminal_closed(self) -> None:
        """The terminal went away (see :mod:`desk.driver`): quit like SIGHUP. Thread-safe."""
        self.post_message(self.TerminalClosed())

    def on_desk_app_terminal_closed(self, message: TerminalClosed) -> None:
        """Nobody can see or type any more: a system quit."""
        self._begin_quit()

    def action_stop(self) -> None:
        """Esc: stop the running turn; with nothing running, let the key through."""
        if self.console_takes_stop_key():  # the console has the focus: cancel its command
            return
        if self.compression_takes_stop_key():  # the compression panel has the focus
            return
        if self._stop(Surface.DESK_KEY) is None:
            raise SkipAction()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        """The Stop button."""
        if event.button.id == "stop":
            event.stop()
            self._stop(Surface.DESK_BUTTON)
            self.query_one(PromptInput).focus()

    def action_stop_or_quit(self) -> None:
        """Ctrl+C: stop the running turn like Esc; when nothing runs, a second press quits."""
        if self.console_takes_stop_key():
            return
        if self._stop(Surface.DESK_KEY) is None and self.confirm_quit():
            self.action_quit()

    # -- quitting ------------------------------------------------------------------------------

    def action_quit(self) -> None:  # type: ignore[override]
        """Ctrl+Q: a system stop of everything through ``gateway.shutdown()``, then exit."""
        self._begin_quit()

    def _on_quit_signal(self, sig: signal.Signals) -> None:
        self._begin_quit()

    def _begin_quit(self) -> None:
        if self._quit_runner.started:
            return
        running = self.gateway.running_turns
        noun = "turn" if running == 1 else "turns"
        self.status_bar.notice = f"■ stopping {running} {noun}…" if running else "quitting…"
        self.query_one(PromptInput).disabled = True
        self._quit_runner.start(then=self._exit_from_quit_thread)

    class ShutdownFinished(Message):
        """The gateway's shutdown returned; posted from the quit thread."""

    def _exit_from_quit_thread(self) -> None:
        # Not ``call_from_thread(self.exit)``: that runs ``exit`` ahead of the messages already
        # queued, and ``exit`` at once makes every widget "detached" (``is_attached`` checks
        # ``app._exit``), so the handler of the last ``message.complete`` (posted just before
        # the shutdown returned) failed to mount its Markdown and the app crashed with exit
        # code 1 in about one quit of twenty. Posted, the exit waits its turn.
        with contextlib.suppress(RuntimeError):  # the app's loop has closed already
            self.post_message(self.ShutdownFinished())

    def on_desk_app_shutdown_finished(self, message: ShutdownFinished) -> None:
        """Every turn has ended (or the bound expired: it says so first): leave (exit code 0)."""
        self.exit_after_shutdown()

    def on_unmount(self) -> None:
        """Backstop: whatever ended the app, every turn ends and nothing leaks."""
        remove_quit_signals(self._signals)
        self._signals = []
        if self._quit_runner.started:
            # A quit is under way: wait for the gateway (bounded by its own timeout), not for
            # the quit thread, which may still be handing ``exit`` to this (now busy) loop.
            config = getattr(self.gateway, "config", None)
            self._quit_runner.wait(float(getattr(config, "shutdown_timeout_s", 10.0)) + 5.0)
        else:
            self._quit_runner.run_here()
        self._bridge.close()

    # -- gateway events ------------------------------------------------------------------------

    def _ours(self, session_id: str) -> bool:
        """True for an event of this desk's session while its widgets can still change."""
        if session_id != self._session_id:
            return False
        try:
            return self.transcript.is_attached  # False once the app is exiting
        except NoMatches:
            return False

    async def on_turn_started(self, message: TurnStarted) -> None:
        """``message.start``: show the reply block under its prompt."""
        if not self._ours(message.session_id):
            return
        payload = message.payload
        transcript = self.transcript
        prompt = await transcript.add_prompt(payload.turn_id, payload.prompt)
        prompt.status = "sent"
        self._queued.discard(payload.turn_id)
        self._set_queued()
        await transcript.add_reply(payload.turn_id)
        self._set_running(payload.turn_id)

    async def on_reply_delta(self, message: ReplyDelta) -> None:
        """``message.delta``: stream the piece into its reply."""
        if not self._ours(message.session_id):
            return
        payload = message.payload
        reply = self.transcript.reply(payload.turn_id)
        if reply is None:
            reply = await self.transcript.add_reply(payload.turn_id)
        if self._bridge.turn_ended(payload.turn_id):
            reply.absorb(payload.text, payload.reasoning)  # the completion draws it, next
        else:
            await reply.append(payload.text, payload.reasoning)

    def on_turn_state_changed(self, message: TurnStateChanged) -> None:
        """``turn.state``: waiting, streaming, retrying, stopping."""
        if not self._ours(message.session_id):
            return
        payload = message.payload
        if payload.turn_id == self._running_turn:
            status = self.status_bar
            status.state = payload.state
            status.detail = payload.detail if payload.state == "retrying" else ""

    async def on_turn_completed(self, message: TurnCompleted) -> None:
        """``message.complete``: the canonical text, and the stop marker or error line."""
        if not self._ours(message.session_id):
            return
        payload = message.payload
        reply = self.transcript.reply(payload.turn_id)
        if reply is None:
            reply = await self.transcript.add_reply(payload.turn_id)
        await reply.finish(payload.text, payload.status, self._note_for(payload))
        if payload.turn_id == self._running_turn:
            self._set_running(None)

    def _note_for(self, payload: MessageComplete) -> str:
        if payload.status == "interrupted" and payload.stop is not None:
            return self._format_receipt(payload.stop)
        if payload.status == "failed":
            return format_failure(payload.error, payload.exit_reason)
        if payload.status != "completed":
            return f"■ {payload.exit_reason}"
        return ""

    async def on_prompt_was_queued(self, message: PromptWasQueued) -> None:
        """``prompt.queued``: show the prompt as waiting."""
        if not self._ours(message.session_id):
            return
        payload = message.payload
        block = await self.transcript.add_prompt(payload.turn_id, payload.text, queued=True)
        if block.status != "sent":  # it may already have started
            block.status = "queued"
            self._queued.add(payload.turn_id)
            self._set_queued()

    def on_prompt_was_dropped(self, message: PromptWasDropped) -> None:
        """``prompt.dropped``: a queued prompt will never run."""
        if not self._ours(message.session_id):
            return
        payload = message.payload
        block = self.transcript.prompt(payload.turn_id)
        if block is not None:
            block.detail = payload.reason
            block.status = "dropped"
        self._queued.discard(payload.turn_id)
        self._set_queued()

    def on_gateway_is_stopping(self, message: GatewayIsStopping) -> None:
        """``gateway.stopping``: say how many turns the shutdown waits for."""
        turns = message.payload.turns
        noun = "turn" if turns == 1 else "turns"
        self.status_bar.notice = f"■ stopping {turns} {noun}…" if turns else "quitting…"
