"""The widgets of the main screen that outlive a session, made before they are mounted.

:class:`desk.app.DeskApp` makes them (:meth:`DeskWidgets.make`) and hands them to the
controllers (:mod:`desk.wiring`) and to the main screen (:mod:`desk.screens.desk_screen`),
which lays them out.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Button

from desk.config import ConnectionInfo
from desk.widgets.click_button import ClickButton
from desk.widgets.compression_panel import CompressionPanel
from desk.widgets.console_panel import ConsolePanel
from desk.widgets.key_footer import KeyFooter
from desk.widgets.prompt_input import PromptInput
from desk.widgets.queue_list import QueueList
from desk.widgets.sessions_sidebar import SessionsSidebar
from desk.widgets.status_bar import Clock, StatusBar
from tui_gateway.settings.resolution import BusyInput

PLACEHOLDER = "Ask anything · Enter sends · Ctrl+J new line"
"""The prompt box's placeholder."""


@dataclass(frozen=True, slots=True)
class DeskWidgets:
    """The widgets of the main screen that outlive a session (each session has its own view).

    Attributes:
        prompt: the prompt box.
        stop_button: the Stop button beside it.
        status: the status bar.
        console_panel: the console panel (F2).
        compression_panel: the compression panel.
        queue: the queued prompts, above the prompt box.
        sidebar: the sessions sidebar (Ctrl+B).
    """

    prompt: PromptInput
    stop_button: Button
    status: StatusBar
    console_panel: ConsolePanel
    compression_panel: CompressionPanel
    queue: QueueList
    sidebar: SessionsSidebar

    def layout(self) -> ComposeResult:
        """The main screen's widgets in their places (call from ``compose``); the app mounts
        the session's view above the console panel."""
        yield self.console_panel
        yield self.compression_panel
        yield self.queue
        with Horizontal(id="input-row"):
            yield self.prompt
            yield self.stop_button
        yield self.status
        yield KeyFooter()  # every main key fits in 80 columns
        yield self.sidebar

    @classmethod
    def make(
        cls,
        connection: ConnectionInfo,
        clock: Clock = time.monotonic,
        *,
        busy_input: BusyInput = "queue",
    ) -> DeskWidgets:
        """The widgets, not mounted yet.

        Args:
            connection: the model server the status bar shows.
            clock: the clock of elapsed times.
            busy_input: what Enter does in the prompt box while a turn runs.
        """
        return cls(
            prompt=PromptInput(id="prompt", placeholder=PLACEHOLDER, busy_input=busy_input),
            stop_button=ClickButton(
                "■ Stop", id="stop", variant="error", disabled=True, compact=True
            ),
            status=StatusBar(connection, clock=clock, id="status"),
            console_panel=ConsolePanel(id="console"),
            compression_panel=CompressionPanel(clock=clock, id="compression"),
            queue=QueueList(id="queue"),
            sidebar=SessionsSidebar(id="sessions"),
        )
