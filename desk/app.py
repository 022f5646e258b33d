"""The desk app: one gateway, the session on screen, its keys, its stops and its quit.

The app speaks the gateway contract only. It owns one controller per concern
(:mod:`desk.wiring`), shows the session on screen in a
:class:`~desk.widgets.session_view.SessionView` on its main screen
(:mod:`desk.screens.desk_screen`), and gets gateway events from :mod:`desk.bridge` when no view
shows their session.

Stops go in with ``session_interrupt``, called directly (it only schedules a cancel, so it is
fast and never blocks): from the Esc / Ctrl+C bindings and the Stop button on the UI thread,
and, in a real terminal, from the input thread before the key even reaches the UI queue
(:meth:`DeskApp.stop_from_input_thread`, see :mod:`desk.driver`). Quitting is a system stop:
``gateway.shutdown()`` runs on a plain thread (:mod:`desk.controllers.quit`) and the app exits
when it returns. Textual is never relied on to end a turn.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual import constants, events, on
from textual.actions import SkipAction
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import BindingType
from textual.driver import Driver
from textual.message_pump import MessagePump
from textual.screen import Screen
from textual.widgets import TextArea

from agent.stops import Surface
from contract.ports import DeskGateway
from contract.results import ShutdownReport
from desk.app_keys import APP_BINDINGS, bind_stop_key
from desk.app_start import DeskStart
from desk.approval_keys import Decision
from desk.banner import banner_text
from desk.bridge import GatewayBridge
from desk.commands import DeskCommands, PaletteCommand
from desk.config import ConnectionInfo
from desk.controllers.help import close_help_on_stop, toggle_help
from desk.controllers.unshown import route_unshown
from desk.driver_choice import desk_driver
from desk.gc_tuning import relax_gc, tune_gc
from desk.input_notes import InputNotes
from desk.late_gateway import LateGateway
from desk.lean_layout import lighten_layouts
from desk.lean_strips import lighten_strips
from desk.messages import (
    BrowserGone,
    GatewayBuilt,
    GatewayMessage,
    ShutdownFinished,
    TerminalClosed,
)
from desk.receipts import ReceiptFormatter, format_stop_receipt
from desk.screens.desk_screen import DeskScreen
from desk.screens.desk_widgets import DeskWidgets
from desk.shutdown import Leave, leave_at_once
from desk.startup import Startup
from desk.stop_key import StopKey
from desk.typing_drain import DrainTyping
from desk.user_config import config_path_shown
from desk.widgets.status_bar import Clock, StatusBar
from desk.wiring import build_controllers
from tui_gateway.settings.resolution import BusyInput

if TYPE_CHECKING:  # a session's view loads Markdown: imported with the first session
    from desk.widgets.session_view import SessionView
    from desk.widgets.transcript import Transcript


class DeskApp(App[int]):
    """The desk; reads the environment (config and theme files) at start.

    Args:
        gateway: the gateway turns run on (the app never creates one), or a
            :class:`~desk.late_gateway.LateGateway` the app builds once its first frame is out.
        connection: what to show about the model server.
        clock: the clock for the running turn's elapsed time.
        receipt_formatter: turns a stop receipt into the marker under a stopped turn.
        escape_delay_ms: if given, sets ``textual.constants.ESCAPE_DELAY`` (milliseconds a lone
            ESC byte waits before it is the Esc key).
        handle_signals: handle SIGTERM and SIGHUP as a system quit while the app runs.
        startup: resume or new session, and the start-up notice.
        stop_key: the key that stops the running turn (Esc by default; Ctrl+C stops too).
        busy_input: what Enter does while a turn runs: ``queue`` (the default) or ``steer``;
            Ctrl+T does the other.
        leave: when given, a quit in a real terminal whose shutdown ended every worker gives
            the terminal back and calls it on the quit's thread, instead of waiting for the UI
            thread to exit the app (``desk`` itself; see :func:`desk.shutdown.leave_at_once`).
    """

    CSS_PATH = Path(__file__).with_name("app.tcss")  # widgets carry theirs beside them
    TITLE = "desk"
    COMMANDS = {DeskCommands}  # desk's commands first, then Textual's (see palette_commands)

    BINDINGS: ClassVar[list[BindingType]] = APP_BINDINGS  # the stop key: bind_stop_key

    view_class: ClassVar[type[SessionView] | None] = None
    """The sessions' view (None: :class:`~desk.widgets.session_view.SessionView`; benches and
    tests put a subclass of it)."""

    def __init__(
        self,
        gateway: DeskGateway | LateGateway,
        connection: ConnectionInfo,
        *,
        clock: Clock = time.monotonic,
        receipt_formatter: ReceiptFormatter = format_stop_receipt,
        escape_delay_ms: int | None = None,
        handle_signals: bool = True,
        startup: Startup | None = None,
        stop_key: StopKey | None = None,
        busy_input: BusyInput = "queue",
        leave: Leave | None = None,
    ) -> None:
        if escape_delay_ms is not None:
            # Final in Textual, but its parser reads it for every ESC, so setting it works.
            constants.ESCAPE_DELAY = escape_delay_ms / 1000.0  # type: ignore[misc]
        relax_gc()  # building the screen and reading a session allocate much, free little
        lighten_strips()  # every line drawn was a cycle: see desk.lean_strips
        lighten_layouts()  # and every layout: see desk.lean_layout
        env = dict(os.environ)
        super().__init__()
        self.stop_key = stop_key or StopKey()
        """The key that stops the running turn (with Ctrl+C)."""
        bind_stop_key(self._bindings.key_to_bindings, self.stop_key)
        late = gateway if isinstance(gateway, LateGateway) else None
        gateway = gateway.port if isinstance(gateway, LateGateway) else gateway
        self.gateway = gateway
        """The gateway (injected)."""
        self.connection = connection
        """The model server shown."""
        self.resume_hint = ""
        """How to resume the session on screen, set as the desk exits ("" when none: no turn,
        or not saved); ``desk`` prints it after the screen is restored."""
        self._handle_signals = handle_signals
        self._leave = leave
        self._banner = banner_text(connection, config_path_shown(env))
        self.widgets = DeskWidgets.make(connection, clock, busy_input=busy_input)
        """The main screen's widgets (the session's view aside)."""
        self._bridge = GatewayBridge(gateway, self, self._view_for, clock=clock)
        self._start = DeskStart(self, lambda: self.controllers, self.widgets, late, self._bridge)
        self.controllers = build_controllers(
            self,
            gateway,
            connection,
            self.widgets,
            env=env,
            clock=clock,
            format_receipt=receipt_formatter,
            startup=startup or Startup(),
            stop_key=self.stop_key,
            turn_ended=self._bridge.turn_ended,
            switch=self._bridge.switch,
            mount_view=self._mount_view,
            focus_prompt=self.focus_prompt,
            shutdown_finished=self._shutdown_finished,
            starting=self._start.starting,
        )
        """The controllers, one per concern."""
        running = lambda: self.running_turn  # noqa: E731
        self._notes = InputNotes(self, self.widgets.prompt, self.controllers.stops, running)

    # -- set-up --------------------------------------------------------------------------------

    def get_driver_class(self) -> type[Driver]:
        """desk's own driver for a terminal or a browser (:func:`desk.driver_choice.desk_driver`),
        else Textual's choice. Headless runs (tests) never use it."""
        return desk_driver() or super().get_driver_class()

    def get_default_screen(self) -> Screen[None]:
        """The main screen (its widgets and what they ask: :mod:`desk.screens.desk_screen`)."""
        return DeskScreen(self.widgets, self.controllers)

    def compose(self) -> ComposeResult:
        yield from self.widgets.layout()

    async def on_mount(self) -> None:
        c, prompt = self.controllers, self.widgets.prompt
        prompt.answer_key = self._answer_key
        prompt.side_key = self.widgets.sidebar.take_key
        prompt.complete_mention = c.mentions.complete
        prompt.focus()
        if self._handle_signals:
            c.quit.install_signals()
        self.call_after_refresh(tune_gc)  # once the first screen is built
        c.themes.report_problems()
        await self._start.begin()

    async def on_gateway_built(self, message: GatewayBuilt) -> None:
        """The gateway is built: the session starts (:meth:`DeskStart.built`)."""
        await self._start.built(message)

    async def _mount_view(self, session_id: str) -> SessionView:
        from desk.widgets.session_view import SessionView  # Markdown loads with the first one

        view = (self.view_class or SessionView)(session_id, self.controllers, banner=self._banner)
        await self.mount(view, before=self.widgets.console_panel)
        return view

    def _view_for(self, session_id: str) -> MessagePump | None:
        # On the gateway's delivery thread: one attribute read, no DOM walk.
        view = self.controllers.sessions.view
        return view if isinstance(view, MessagePump) and view.session_id == session_id else None

    # -- what tests and the entry point read ---------------------------------------------------

    @property
    def view(self) -> SessionView:
        """The view of the session shown (made on mount)."""
        from desk.widgets.session_view import SessionView

        view = self.controllers.sessions.view
        if not isinstance(view, SessionView):
            raise RuntimeError("the desk is not mounted yet")
        return view

    @property
    def session_id(self) -> str:
        """The session this desk shows (created on mount)."""
        return self.view.session_id

    @property
    def running_turn(self) -> str | None:
        """The turn the desk shows as running, if any."""
        view = self.controllers.sessions.view
        return view.running_turn if view is not None else None

    @property
    def transcript(self) -> Transcript:
        """The transcript of the session shown."""
        return self.view.transcript

    @property
    def status_bar(self) -> StatusBar:
        """The status bar widget."""
        return self.widgets.status

    @property
    def shutdown_report(self) -> ShutdownReport | None:
        """What the gateway's shutdown did, once it returned (its unsaved files among it)."""
        return self.controllers.quit.report

    @property
    def exit_note(self) -> str:
        """Set when a quit gave up waiting for workers (``desk`` prints it after exiting)."""
        return self.controllers.quit.exit_note

    def focus_prompt(self) -> None:
        """Give the focus back to the prompt box (unless a quit disabled it)."""
        prompt = self.widgets.prompt
        if not prompt.disabled:
            prompt.focus()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Stop is dimmed while no turn, child agent nor console command runs (Esc reaches
        other widgets; while the desk starts it is kept for what Enter sent), the approval keys
        while one waits."""
        c = self.controllers
        idle = self.running_turn is None and not c.console.busy and not c.agents.running
        if action == "stop" and idle and self.controllers.sessions.view:
            return None
        if action == "answer_approval":
            return self.controllers.tools.waiting is not None
        return True

    def _answer_key(self, event: events.Key) -> bool:
        """The prompt box asks whether a key answers a waiting approval, or moves the focus
        to it (see :mod:`desk.approval_keys`)."""
        return self.controllers.tools.answer_key(event.key)

    def action_answer_approval(self, decision: Decision) -> None:
        """Alt+y / Alt+a / Alt+n (bound while Esc is not the stop key): answer at once."""
        if not self.controllers.tools.answer_now(decision):
            raise SkipAction()

    # -- stops ---------------------------------------------------------------------------------

    @property
    def input_stop_keys(self) -> frozenset[str]:
        """The keys the terminal's input thread offers :meth:`stop_from_input_thread`."""
        return self.controllers.stops.input_keys

    def stop_from_input_thread(
        self, key: str, read_at: float | None = None, key_time: float | None = None
    ) -> bool:
        """The stop key or Ctrl+C straight from the terminal's input thread (see
        :mod:`desk.driver` and :mod:`desk.controllers.stop_keys`): ``key`` is one of
        :attr:`input_stop_keys`, ``read_at`` when its bytes were read (``time.monotonic()``,
        None: now), ``key_time`` the key event's time (``Message.time``) or None.

        Returns:
            True when the key was taken as a stop (consumed); False to let it go on.
        """
        read_at = time.monotonic() if read_at is None else read_at
        if key == "escape" and self._notes.popup_key_pending():
            return False  # after a Ctrl+P the app has not seen yet: the palette's Esc
        return self.controllers.stops.from_input_thread(key, read_at, key_time)

    async def on_event(self, event: events.Event) -> None:
        """Note each key and mouse press before it is routed (:mod:`desk.input_notes`)."""
        if isinstance(event, events.Key):
            await self._notes.route_key(event, self._dimmed_stop, super().on_event)
            return
        if isinstance(event, events.MouseDown) and not event.is_forwarded:
            self._notes.mouse_down(event)
        elif isinstance(event, events.MouseUp) and not event.is_forwarded:
            await super().on_event(event)  # Textual's click, when it makes one
            self._notes.mouse_up(event)
            return
        await super().on_event(event)

    def _dimmed_stop(self, event: events.Key) -> bool:
        """The stop key while Stop is dimmed (the screen shows nothing running): the gateway
        may run a turn the screen has not drawn yet (the next prompt's, a moment after the
        last one ended), so the key goes to it all the same (a key names no turn, see
        :mod:`desk.controllers.stop_keys`); True when it stopped something, else the key goes
        on to the widgets."""
        if event.is_forwarded or event.key != self.stop_key.key:
            return False
        if (
            self.check_action("stop", ()) is not None
            or not self.controllers.stops.stop_key_pressed()
        ):
            return False
        close_help_on_stop(self, event.key)
        return True

    def action_stop(self) -> None:
        """The stop key: stop the running turn; with nothing running, let the key through."""
        if not self.controllers.stops.stop_key_pressed():
            raise SkipAction()
        close_help_on_stop(self, self.stop_key.key)  # Esc stops and closes the help

    def action_stop_or_quit(self) -> None:
        """Ctrl+C: stop the running turn; when nothing runs, empty the prompt box, or quit on
        a second press (:meth:`~desk.controllers.stop_keys.StopKeysController.ctrl_c_pressed`)."""
        self.controllers.stops.ctrl_c_pressed()

    # -- quitting ------------------------------------------------------------------------------

    def terminal_closed(self) -> None:
        """The terminal went away (see :mod:`desk.driver`): quit like SIGHUP. Thread-safe."""
        self.post_message(TerminalClosed())

    def on_terminal_closed(self, message: TerminalClosed) -> None:
        """Nobody can see or type any more: a system quit."""
        self.controllers.quit.begin()

    def browser_gone(self) -> None:
        """The browser went away (see :mod:`desk.web_driver`): quit. Thread-safe."""
        self._start.post_from_thread(BrowserGone())

    def on_browser_gone(self, message: BrowserGone) -> None:
        """Nobody sees this desk any more: stop the running turns as ``web.disconnect`` (a
        system stop), then quit. Handled after the desk's start (its session exists)."""
        self.controllers.quit.begin(gone=Surface.WEB_DISCONNECT)

    def quit_from_input_thread(self, keys_posted: int = 0) -> None:
        """Ctrl+Q on the terminal's input thread: the gateway's shutdown starts now (see
        :mod:`desk.driver`), after the keys the app has not seen yet and the prompts still on
        their way to the screen (:mod:`desk.sends_in_flight`); the key goes on to
        :meth:`action_quit`. Thread-safe."""
        typing = keys_posted > self._notes.keys_seen or self.widgets.prompt.sends.pending
        self.controllers.quit.begin_from_input_thread(typing=typing)

    def popup_key_from_input_thread(self, keys_posted: int = 0) -> None:
        """Ctrl+P read on the input thread: an Esc read before the app sees it is the palette's."""
        self._notes.popup_key_read(keys_posted)

    def action_quit(self) -> None:  # type: ignore[override]
        """Ctrl+Q: a system stop of everything through ``gateway.shutdown()``, then exit."""
        self.controllers.quit.begin(typed=True)

    def on_drain_typing(self, message: DrainTyping) -> None:
        """After the keys typed before a quit: on where keys go (see desk.typing_drain)."""
        (self.focused or self.screen).post_message(DrainTyping(message.done, message.hops))

    def _shutdown_finished(self) -> None:
        report = self.controllers.quit.report
        if leave_at_once(self._leave, report, self._driver, self._resume_hint_now):
            return  # all saved, the terminal given back: the UI thread is not waited for
        # Not ``call_from_thread(self.exit)``: that exits ahead of the messages already queued,
        # and exiting makes every widget "detached" (``is_attached`` checks ``app._exit``): the
        # handler of the last ``message.complete`` then failed to mount its Markdown and the
        # app crashed in about one quit of twenty. Posted, the exit waits its turn.
        self._start.post_from_thread(ShutdownFinished())

    def _resume_hint_now(self) -> str:
        """The resume hint, kept for after the app (any thread)."""
        self.resume_hint = self.controllers.sessions.resume_hint_from_any_thread()
        return self.resume_hint

    async def on_shutdown_finished(self, message: ShutdownFinished) -> None:
        """Every turn has ended (or the bound expired: it says so first): leave (exit code 0)."""
        from desk.widgets.session_view import SessionView

        view = self.controllers.sessions.view
        if isinstance(view, SessionView):  # it handles its events on a queue of its own
            await view.drained()  # let it finish them
        self.resume_hint = self.controllers.sessions.resume_hint()
        self.controllers.quit.after_shutdown()

    def on_unmount(self) -> None:
        """Backstop: whatever ended the app, every turn ends and nothing leaks."""
        if not self.resume_hint:
            self.resume_hint = self.controllers.sessions.resume_hint()
        self.controllers.quit.backstop()
        self._bridge.close()

    # -- gateway events no view took -----------------------------------------------------------

    @on(GatewayMessage)
    async def _gateway_message(self, message: GatewayMessage) -> None:
        """An event no view took (:mod:`desk.controllers.unshown`)."""
        await route_unshown(self.controllers, message)

    @on(TextArea.Changed, "#prompt")
    def _prompt_changed(self) -> None:
        """What is typed counts in the gauge (it is the next request's prompt), and an ``@``
        being typed lists the workspace's files."""
        self.controllers.gauge.count_pending(self.controllers.sessions.view)
        self.controllers.mentions.changed()

    # -- keys -----------------------------------------------------------------

    def action_edit_prompt(self) -> None:
        """Ctrl+G: write the prompt in ``$VISUAL``/``$EDITOR`` between the keys typed before
        it and those after it (:mod:`desk.controllers.editor`)."""
        (self.focused or self.screen).call_later(self.controllers.editor.edit)

    def action_toggle_console(self) -> None:
        """F2: open the console (focused) or close it (the prompt box gets the focus back)."""
        if self.controllers.console.toggle():
            self.focus_prompt()

    def action_toggle_sessions(self) -> None:
        """Ctrl+B: open the sessions sidebar (focused) or close it."""
        self.controllers.sessions.toggle_sidebar()

    async def action_new_session(self) -> None:
        """Start an empty session and show it (the one shown stays saved)."""
        await self.controllers.sessions.new_session()

    def action_resume_session(self) -> None:
        """Open the sessions sidebar to pick a session to resume."""
        self.controllers.sessions.open_sidebar()

    async def action_compress(self) -> None:
        """The palette's "Compress the conversation"."""
        view = self.controllers.sessions.view
        if view is not None:
            await self.controllers.compression.start(view, None)

    async def action_export(self, path: str = "") -> None:
        """``/export [PATH]``: write the session as Markdown (atomically) and say where."""
        await self.controllers.export.export(self.view, path)

    def action_page_transcript(self, direction: int) -> None:
        """PageUp / PageDown scroll the transcript while the prompt box keeps the focus; over
        another screen (the help) the key is that screen's."""
        if not isinstance(self.screen, DeskScreen):
            raise SkipAction()
        self.view.transcript.page(direction)

    def action_follow_transcript(self) -> None:
        """End / Ctrl+End: back to the end of the transcript, following it again; the key goes
        on to the focused widget (End moves the prompt box's cursor too)."""
        view = self.controllers.sessions.view
        if view is not None and isinstance(self.screen, DeskScreen):
            view.transcript.follow()
        raise SkipAction()

    # -- help and palette ----------------------------------------------------------------------

    def action_help(self) -> None:
        """F1: show (or close) the keys and commands (:mod:`desk.controllers.help`)."""
        commands = self.controllers.console.commands
        toggle_help(self, commands, self.palette_commands, self.stop_key)

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        """Textual's system commands, less its theme picker (the desk's saves the choice)."""
        for command in super().get_system_commands(screen):
            if command.title != "Theme":
                yield command

    def palette_commands(self, screen: Screen[object] | None = None) -> list[PaletteCommand]:
        """The palette's entries: the desk's own, then Textual's system commands (of ``screen``)."""
        system = self.get_system_commands(screen or self.screen)
        return self.controllers.palette.commands(self.controllers.sessions.view, system)
