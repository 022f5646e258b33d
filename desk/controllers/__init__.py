"""The desk's controllers: one plain class per concern, owned by the app.

:class:`desk.app.DeskApp` builds its widgets, then one controller per concern, each given only
what it needs (the gateway port, the widgets it drives, a way to notify), and hands them to the
:class:`~desk.widgets.session_view.SessionView` of each session it shows. Widgets post messages;
the app's or the view's handler calls the controller of that concern; controllers set the
widgets' attributes ("attributes down, messages up").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from desk.controllers.agents import AgentsController
    from desk.controllers.checkpoints import CheckpointsController
    from desk.controllers.compression import CompressionController
    from desk.controllers.console import ConsoleController
    from desk.controllers.editor import EditorController
    from desk.controllers.export import ExportController
    from desk.controllers.gauge import ContextGauge
    from desk.controllers.mcp import McpController
    from desk.controllers.mentions import MentionController
    from desk.controllers.palette import PaletteController
    from desk.controllers.queue import QueueController
    from desk.controllers.quit import QuitController
    from desk.controllers.server import ServerController
    from desk.controllers.sessions import SessionsController
    from desk.controllers.stop_keys import StopKeysController
    from desk.controllers.themes import ThemeController
    from desk.controllers.tool_calls import ToolCallsController
    from desk.controllers.turns import TurnsController


@dataclass(frozen=True, slots=True)
class DeskControllers:
    """Every controller of one desk.

    Attributes:
        turns: prompts, stops and turn events (:mod:`desk.controllers.turns`).
        queue: queued prompts (:mod:`desk.controllers.queue`).
        tools: tool cards and approvals (:mod:`desk.controllers.tool_calls`).
        agents: child agents' cards (:mod:`desk.controllers.agents`).
        compression: ``/compress`` and its panel (:mod:`desk.controllers.compression`).
        console: the console panel and commands (:mod:`desk.controllers.console`).
        sessions: which session is shown, the sidebar (:mod:`desk.controllers.sessions`).
        gauge: the context gauge (:mod:`desk.controllers.gauge`).
        themes: colour themes (:mod:`desk.controllers.themes`).
        palette: the command palette and the model choice (:mod:`desk.controllers.palette`).
        export: ``/export`` (:mod:`desk.controllers.export`).
        quit: quitting (:mod:`desk.controllers.quit`).
        stops: the stop keys, from the input thread and the UI (:mod:`desk.controllers.stop_keys`).
        mcp: the MCP servers' failures on screen (:mod:`desk.controllers.mcp`).
        server: the model server's state on screen (:mod:`desk.controllers.server`).
        checkpoints: ``/undo`` and ``/diff`` (:mod:`desk.controllers.checkpoints`).
        mentions: ``@`` file mentions in the prompt box (:mod:`desk.controllers.mentions`).
        editor: the prompt in ``$VISUAL``/``$EDITOR`` (:mod:`desk.controllers.editor`).
    """

    turns: TurnsController
    queue: QueueController
    tools: ToolCallsController
    agents: AgentsController
    compression: CompressionController
    console: ConsoleController
    sessions: SessionsController
    gauge: ContextGauge
    themes: ThemeController
    palette: PaletteController
    export: ExportController
    quit: QuitController
    stops: StopKeysController
    mcp: McpController
    server: ServerController
    checkpoints: CheckpointsController
    mentions: MentionController
    editor: EditorController
