"""How a desk is put together: one controller per concern, wired to the widgets.

:class:`desk.app.DeskApp` calls :func:`build_controllers` once, in its ``__init__``: the widgets
exist by then (they are mounted later, by the app's ``compose``), so every controller
gets the very widgets it drives (:class:`desk.screens.desk_widgets.DeskWidgets`), and the
app's own methods for what only the app can do (notify, timers, screens, exiting).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING

from textual.app import App
from textual.events import Callback

from contract.ports import DeskGateway
from desk.approval_keys import chords_answer
from desk.config import ConnectionInfo
from desk.controllers import DeskControllers
from desk.controllers.agents import AgentsController
from desk.controllers.checkpoints import CheckpointsController
from desk.controllers.compression import CompressionController
from desk.controllers.console import ConsoleController
from desk.controllers.editor import EditorController
from desk.controllers.export import ExportController
from desk.controllers.gauge import ContextGauge
from desk.controllers.help import close_help_on_stop
from desk.controllers.mcp import McpController
from desk.controllers.mentions import MentionController
from desk.controllers.palette import PALETTE_STOP_REASON, PaletteController
from desk.controllers.queue import QueueController
from desk.controllers.quit import QuitController
from desk.controllers.server import ServerController
from desk.controllers.sessions import SessionsController, Switch
from desk.controllers.stop_keys import StopKeysController
from desk.controllers.themes import ThemeController
from desk.controllers.tool_calls import ToolCallsController
from desk.controllers.turns import TurnsController
from desk.history_file import HistoryFile
from desk.prompt_history import PromptHistory
from desk.receipts import ReceiptFormatter
from desk.screens.desk_widgets import DeskWidgets
from desk.screens.popups import closes_on_escape
from desk.startup import Startup
from desk.stop_key import StopKey
from desk.typing_drain import post_after_keys
from desk.widgets.prompt_input import PromptInput
from desk.widgets.status_bar import Clock, StatusBar

if TYPE_CHECKING:  # a session's view loads Markdown: not before the first frame
    from desk.widgets.session_view import SessionView


def build_controllers(
    app: App[int],
    gateway: DeskGateway,
    connection: ConnectionInfo,
    widgets: DeskWidgets,
    *,
    env: Mapping[str, str],
    clock: Clock,
    format_receipt: ReceiptFormatter,
    startup: Startup,
    stop_key: StopKey,
    turn_ended: Callable[[str], bool],
    switch: Switch,
    mount_view: Callable[[str], Awaitable[SessionView]],
    focus_prompt: Callable[[], None],
    shutdown_finished: Callable[[], None],
    starting: Callable[[], bool] = lambda: False,
) -> DeskControllers:
    """Every controller of a desk, wired to its widgets and to the app.

    Args:
        app: the app (toasts, timers, screens, actions, themes, exiting).
        gateway: the gateway.
        connection: the model server shown.
        widgets: the main screen's widgets.
        env: the environment (where the config and theme files are).
        clock: the clock of elapsed times and of the Ctrl+C double press.
        format_receipt: how stop receipts read.
        startup: resume or new session, and the start-up notice.
        stop_key: the key that stops the running turn.
        turn_ended: True once a turn's ``message.complete`` was posted (the bridge).
        switch: points the deliveries at a new view of a session and says what its running
            turn showed so far (the bridge).
        mount_view: makes and mounts a session's view (the app).
        focus_prompt: gives the focus back to the prompt box (the app).
        shutdown_finished: called on the quit thread once the gateway's shutdown returned.
        starting: True while the desk is not ready for prompts yet (any thread; see
            :class:`QuitController`).
    """
    notify, status = app.notify, widgets.status
    if startup.history is not None:
        widgets.prompt.prompt_history = PromptHistory(file=HistoryFile(startup.history))
    agents = AgentsController(
        gateway,
        clock=clock,
        format_receipt=format_receipt,
        notify=notify,
        refresh_bindings=app.refresh_bindings,
        count_running=lambda count: setattr(status, "agents", count),
        count_waiting=lambda count: setattr(status, "agents_waiting", count),
    )
    tools = ToolCallsController(
        gateway,
        clock=clock,
        notify=notify,
        focus_prompt=focus_prompt,
        refresh_bindings=app.refresh_bindings,
        box_for=agents.box_for,
        chords=chords_answer(stop_key.keys),
        focus_prompt_now=lambda: widgets.prompt.screen.set_focus(widgets.prompt),
    )
    turns = TurnsController(
        gateway,
        status=status,
        stop_button=widgets.stop_button,
        prompt=widgets.prompt,
        clock=clock,
        format_receipt=format_receipt,
        turn_ended=turn_ended,
        refresh_bindings=app.refresh_bindings,
        notify=notify,
        stopping=tools.stopping,
    )
    queue = QueueController(
        gateway,
        turns=turns,
        queue_list=widgets.queue,
        prompt=widgets.prompt,
        notify=notify,
        focus_prompt=focus_prompt,
    )
    gauge = ContextGauge(status, widgets.prompt)
    sessions = SessionsController(
        gateway,
        startup=startup,
        sidebar=widgets.sidebar,
        status=status,
        gauge=gauge,
        turns=turns,
        queue=queue,
        format_receipt=format_receipt,
        switch=switch,
        mount_view=mount_view,
        notify=notify,
        focus_prompt=focus_prompt,
        ask_delete=app.push_screen,
        later=app.call_later,
        after_refresh=app.call_after_refresh,
        switched=agents.forget,
    )
    themes = ThemeController(app, env, notify=notify)
    server = ServerController(
        gateway,
        status=status,
        connection=connection,
        model=lambda: status.model or connection.model,
        view=lambda: sessions.view,
        notify=notify,
        listed=lambda listed: gauge.model_listed(listed, sessions.view),
    )
    palette = PaletteController(
        gateway,
        themes=themes,
        status=status,
        connection=connection,
        run_action=app.run_action,
        stop=lambda: _palette_stop(turns, sessions),
        notify=notify,
        models=lambda: server.models,
    )
    compression = CompressionController(
        gateway,
        panel=widgets.compression_panel,
        status=status,
        turns=turns,
        queue=queue,
        gauge=gauge,
        set_timer=app.set_timer,
        notify=notify,
        focus_prompt=focus_prompt,
    )
    console = ConsoleController(
        gateway,
        panel=widgets.console_panel,
        status=status,
        turns=turns,
        show_session=sessions.show_new,  # a /new session, with the model new sessions use
        shown=lambda: sessions.view,
        open_sessions=sessions.open_sidebar,
        notify=notify,
        refresh_bindings=app.refresh_bindings,
    )
    mcp = McpController(status, lambda: sessions.view, notify)
    quit = QuitController(
        gateway,
        status=status,
        prompt=widgets.prompt,
        clock=clock,
        set_timer=app.set_timer,
        exit=app.exit,
        shutdown_finished=shutdown_finished,
        began=turns.quitting,
        servers=lambda: mcp.running,
        post=lambda message: post_after_keys(app, message),
        starting=starting,
    )
    stops = StopKeysController(
        gateway,
        stop_key=stop_key,
        turns=turns,
        console=console,
        sessions=sessions,
        quit=quit,
        # through the app's queue, ahead of the keys the input thread reads after the stop
        stopped_from_input_thread=lambda key: app.post_message(
            Callback(callback=lambda: _stopped_by_key(app, tools, key))
        ),
        popup_takes=lambda key: key == "escape" and closes_on_escape(app),
        clear_prompt=lambda: _clear_prompt(app, widgets.prompt, status),
        after_typed=widgets.prompt.call_later,
    )
    return DeskControllers(
        turns=turns,
        queue=queue,
        tools=tools,
        agents=agents,
        compression=compression,
        console=console,
        sessions=sessions,
        gauge=gauge,
        themes=themes,
        palette=palette,
        export=ExportController(
            gateway, model=lambda: palette.model, format_receipt=format_receipt
        ),
        quit=quit,
        stops=stops,
        mcp=mcp,
        server=server,
        checkpoints=CheckpointsController(gateway),
        mentions=MentionController(gateway, widgets.prompt),
        editor=EditorController(
            widgets.prompt,
            app.suspend,
            notify,
            env,
            quit_now=quit.begin_from_input_thread,
            quit_over=quit.wait_over,
        ),
    )


def _palette_stop(turns: TurnsController, sessions: SessionsController) -> None:
    """The palette's Stop: a command's stop of what the shown session runs."""
    view = sessions.view
    if view is not None:
        turns.stop_by_command(view, PALETTE_STOP_REASON, title="Stop")


CLEARED_HINT = "Ctrl+C emptied the prompt box: Up recalls what it held"
"""The status bar's notice after Ctrl+C emptied the prompt box."""


def _clear_prompt(app: App[int], prompt: PromptInput, status: StatusBar) -> bool:
    """Ctrl+C with nothing running: empty the prompt box into its history (see
    :class:`~desk.controllers.stop_keys.StopKeysController`, which calls it once the keys
    typed before the Ctrl+C are in the box); True when it held text."""
    text = prompt.text
    if not text.strip():
        return False
    prompt.prompt_history.add(text)
    prompt.clear()
    status.notice = CLEARED_HINT

    def fade() -> None:
        if status.notice == CLEARED_HINT:
            status.notice = ""

    app.set_timer(3.0, fade)
    return True


def _stopped_by_key(app: App[int], tools: ToolCallsController, key: str) -> None:
    """On the UI thread, after the input thread stopped a turn with ``key``: the approvals
    stop taking answers, and Esc closes the help screen too (it never reaches the screen)."""
    tools.stopping()
    close_help_on_stop(app, key)
