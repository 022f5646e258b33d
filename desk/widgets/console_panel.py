"""The console panel (F2): command output, a command line with history, and a Cancel button.

Each command gets a :class:`~desk.widgets.console_entry.ConsoleEntry`: the line typed, its
output (wrapped at the panel's width, Markdown rendered for commands that write Markdown) and
its outcome, so the output of two commands running at once never interleaves. The panel only
shows and asks: it posts :class:`ConsolePanel.CommandEntered` and
:class:`ConsolePanel.CancelRequested`, and the app runs and cancels commands through the
gateway. Esc or Ctrl+C while the panel has the focus and a command runs cancel that command
(see :mod:`desk.controllers.console`). Its command line, output and button are made the first
time it is used (:mod:`desk.widgets.lazy_children`).
"""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Button

from desk.widgets._css import css_beside
from desk.widgets.click_button import ClickButton
from desk.widgets.console_entry import ConsoleEntry
from desk.widgets.console_input import ConsoleInput
from desk.widgets.lazy_children import LazyChildren

MAX_ENTRIES = 200
"""Commands (and lone lines) kept in the panel; older ones are removed."""


class ConsolePanel(Vertical, LazyChildren):
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
        """The person pressed Enter in the command line.

        Args:
            line: the line ("" for an empty one: nothing runs, though the Enter was pressed).
            key_time: when the Enter key was made (``Message.time``), or None.
        """

        def __init__(self, line: str, key_time: float | None = None) -> None:
            super().__init__()
            self.line = line
            """The command line."""
            self.key_time = key_time
            """When its Enter was made: a stop key made after it cancels its command."""

    class CancelRequested(Message):
        """The person asked to cancel the running commands (Cancel, Esc or Ctrl+C)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._entries: dict[str, ConsoleEntry] = {}  # command id -> its entry
        self._all: list[ConsoleEntry] = []  # every entry kept, oldest first
        self._output: VerticalScroll | None = None  # these three: made on first use
        self._input: ConsoleInput | None = None
        self._cancel: Button | None = None
        self._row: Horizontal | None = None

    def children_to_make(self) -> ComposeResult:
        # The row's children go in once the row is in (children_made): a child given to a
        # container's constructor is mounted only when that container composes, later, and
        # the command line must take the focus at once when the panel opens.
        self._output = VerticalScroll(classes="console-output")
        self._input = ConsoleInput(
            placeholder="console · /help · digest PATH… · Up/Down history",
            id="console-input",
        )
        self._cancel = ClickButton(
            "Cancel",
            id="console-cancel",
            variant="warning",
            compact=True,
            disabled=self.running == 0,
        )
        self._row = Horizontal(classes="console-row")
        yield self._output
        yield self._row

    def children_made(self) -> None:
        assert self._row is not None and self._input is not None and self._cancel is not None
        self._row.mount(self._input, self._cancel)
        self.output.anchor()  # the newest output stays in view unless scrolled up

    @property
    def input(self) -> ConsoleInput:
        """The command line."""
        self.make_children()
        assert self._input is not None
        return self._input

    @property
    def output(self) -> VerticalScroll:
        """The output area (one :class:`ConsoleEntry` per command)."""
        self.make_children()
        assert self._output is not None
        return self._output

    @property
    def text(self) -> str:
        """Everything the panel shows, as plain text (entries one after another)."""
        return "\n".join(entry.text for entry in self._all)

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

    def begin(self, command_id: str, line: str, *, markdown: bool = False) -> ConsoleEntry:
        """Show a command that started: its line, then its output as it comes.

        Args:
            command_id: the gateway's id of the command.
            line: the command line.
            markdown: its output is Markdown.
        """
        entry = ConsoleEntry(line, markdown=markdown, command_id=command_id)
        self._entries[command_id] = entry
        self._add(entry)
        return entry

    def entry(self, command_id: str) -> ConsoleEntry | None:
        """The entry of a command started here, or None."""
        return self._entries.get(command_id)

    def write_to(self, command_id: str, text: str) -> None:
        """Append output of a command (may end mid-line; control characters are made
        visible); output of a command not begun here is ignored."""
        entry = self._entries.get(command_id)
        if entry is not None:
            entry.write(text)

    def finish(self, command_id: str, outcome: str) -> None:
        """Close a command's entry with its outcome line."""
        entry = self._entries.pop(command_id, None)
        if entry is not None:
            entry.finish(outcome)

    def write_line(self, line: str, *, command: str = "") -> None:
        """Show one line that belongs to no running command (e.g. a command the gateway
        refused: ``command`` is its line, ``line`` why)."""
        entry = ConsoleEntry(command)
        entry.finish(line)
        self._add(entry)

    def _add(self, entry: ConsoleEntry) -> None:
        self._all.append(entry)
        while len(self._all) > MAX_ENTRIES:
            old = self._all.pop(0)
            if old.is_mounted:
                old.remove()
        self.output.mount(entry)

    def watch_running(self) -> None:
        if self._cancel is not None:
            self._cancel.disabled = self.running == 0

    def on_console_input_entered(self, event: ConsoleInput.Entered) -> None:
        """Enter in the command line sends it (an empty one is said too: its Enter was
        pressed, and a stop key after it has no command to cancel)."""
        event.stop()
        line = event.line.strip()
        if line:
            self.input.remember(line)
            self.input.value = ""
        self.post_message(self.CommandEntered(line, event.key_time))

    def on_button_pressed(self, event: Button.Pressed) -> None:
        """The Cancel button."""
        if event.button.id == "console-cancel":
            event.stop()
            self.post_message(self.CancelRequested())

    def action_cancel(self) -> None:
        """Esc in the panel with nothing else to stop: cancel the running commands."""
        if self.running:
            self.post_message(self.CancelRequested())
