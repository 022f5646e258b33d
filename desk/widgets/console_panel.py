"""The console panel (F2): command output, a command line with history, and a Cancel button.

The panel only shows and asks: it posts :class:`ConsolePanel.CommandEntered` and
:class:`ConsolePanel.CancelRequested`, and the app runs and cancels commands through the
gateway. Esc or Ctrl+C while the panel has the focus and a command runs cancel that command
(see :mod:`desk.controllers.console`).
"""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Button, Input, Log

from desk.widgets._css import css_beside
from desk.widgets.click_button import ClickButton
from desk.widgets.console_input import ConsoleInput
from tui_gateway.text import terminal_safe

MAX_LINES = 2_000
"""Output lines kept in the panel."""


class ConsolePanel(Vertical):
    """The console.

    Args:
        id: the widget id.
    """

    DEFAULT_CSS = css_beside(__file__)

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel command", show=False),
    ]

    running: reactive[int] = reactive(0)
    """How many commands started from this desk still run."""

    class CommandEntered(Message):
        """The person sent a command line.

        Args:
            line: the line.
        """

        def __init__(self, line: str) -> None:
            super().__init__()
            self.line = line
            """The command line."""

    class CancelRequested(Message):
        """The person asked to cancel the running commands (Cancel, Esc or Ctrl+C)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)

    def compose(self) -> ComposeResult:
        yield Log(max_lines=MAX_LINES, classes="console-output", auto_scroll=True)
        with Horizontal(classes="console-row"):
            yield ConsoleInput(
                placeholder="console · /help · digest PATH… · Up/Down history",
                id="console-input",
            )
            yield ClickButton("Cancel", id="console-cancel", variant="warning", compact=True)

    def on_mount(self) -> None:
        self.query_one("#console-cancel", Button).disabled = True

    @property
    def input(self) -> ConsoleInput:
        """The command line."""
        return self.query_one("#console-input", ConsoleInput)

    @property
    def output(self) -> Log:
        """The output area."""
        return self.query_one(".console-output", Log)

    @property
    def is_open(self) -> bool:
        """True while the panel is shown."""
        return self.has_class("-open")

    def open(self, *, focus: bool = True) -> None:
        """Show the panel (and focus its command line)."""
        self.add_class("-open")
        if focus:
            self.input.focus()

    def close(self) -> None:
        """Hide the panel."""
        self.remove_class("-open")

    def write(self, text: str) -> None:
        """Append output text (may end mid-line; control characters are made visible)."""
        self.output.write(terminal_safe(text))

    def write_line(self, line: str) -> None:
        """Append one whole line, starting a new line first when the output ended mid-line."""
        log = self.output
        if log.lines and log.lines[-1] != "":
            log.write("\n")
        log.write(terminal_safe(line) + "\n")

    def watch_running(self) -> None:
        button = next(self.query("#console-cancel").results(Button), None)
        if button is not None:
            button.disabled = self.running == 0

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Enter in the command line sends it."""
        event.stop()
        line = event.value.strip()
        if not line:
            return
        self.input.remember(line)
        self.input.value = ""
        self.post_message(self.CommandEntered(line))

    def on_button_pressed(self, event: Button.Pressed) -> None:
        """The Cancel button."""
        if event.button.id == "console-cancel":
            event.stop()
            self.post_message(self.CancelRequested())

    def action_cancel(self) -> None:
        """Esc in the panel with nothing else to stop: cancel the running commands."""
        if self.running:
            self.post_message(self.CancelRequested())
