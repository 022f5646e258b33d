"""One command in the console panel: the line typed, its output as it streams, its outcome.

The output wraps at the panel's width (long lines are never cut), and the output of a command
whose console says it writes Markdown (``ConsoleCommandInfo.markdown``, e.g. ``digest``) is
rendered as Markdown. Pieces arrive many times a second while a command streams; the entry
redraws at most every :data:`REDRAW_S` seconds, and keeps the last :data:`MAX_CHARS`
characters of a very long output.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Static

from contract.text import terminal_safe
from desk.widgets._css import css_beside
from desk.widgets.markdown_chunk import MarkdownChunk

MAX_CHARS = 100_000
"""Output kept per command, in characters (its tail)."""

REDRAW_S = 0.05
"""Longest wait between a piece of output and the redraw that shows it, in seconds."""

CUT_LINE = "… earlier output left out …\n"
"""The first line of an output that was cut to its tail."""


class ConsoleEntry(Widget):
    """A command and its output.

    Args:
        line: the command line as typed ("" for a line that is not a command's, e.g. an error).
        markdown: render the output as Markdown (else plain text, wrapped).
        command_id: the gateway's id of the command, or "" for none.
    """

    DEFAULT_CSS = css_beside(__file__)

    def __init__(self, line: str, *, markdown: bool = False, command_id: str = "") -> None:
        super().__init__(classes="-markdown" if markdown else "")
        self.line = line
        """The command line."""
        self.markdown = markdown
        """The output is Markdown."""
        self.command_id = command_id
        """The command's id ("" for none)."""
        self.output = ""
        """The output so far (made terminal-safe; its tail once it passed ``MAX_CHARS``)."""
        self.outcome = ""
        """The line closing the command (``✓ done in 0.2 s``), once it ended."""
        self._timer: Timer | None = None
        self._composed = False  # set in on_mount (``is_mounted`` is only True after it)

    def compose(self) -> ComposeResult:
        if self.line:
            yield Static(terminal_safe(f"› {self.line}"), classes="command", markup=False)
        yield MarkdownChunk(Text(""), classes="body")
        yield Static("", classes="outcome", markup=False)

    def on_mount(self) -> None:
        self._composed = True
        self._redraw()

    @property
    def text(self) -> str:
        """The entry as plain text: the command line, the output, the outcome."""
        parts = [f"› {self.line}"] if self.line else []
        if self.output:
            parts.append(self.output.rstrip("\n"))
        if self.outcome:
            parts.append(self.outcome)
        return "\n".join(parts)

    def write(self, text: str) -> None:
        """Append a piece of output (may end mid-line; control characters are made visible)."""
        if not text:
            return
        output = self.output + terminal_safe(text)
        if len(output) > MAX_CHARS:
            tail = output[-MAX_CHARS:]
            output = CUT_LINE + tail[tail.find("\n") + 1 :]
        self.output = output
        if self._timer is None and self._composed:
            self._timer = self.set_timer(REDRAW_S, self._redraw)

    def finish(self, outcome: str) -> None:
        """Show the line that closes the command, and the whole output at once."""
        self.outcome = terminal_safe(outcome)
        self._redraw()

    def _redraw(self) -> None:
        self._timer = None
        if not self._composed:
            return
        body = self.query_one(".body", MarkdownChunk)
        text = self.output.rstrip("\n")
        if self.markdown:
            # imported here: Markdown and syntax highlighting load with the first command
            # that writes Markdown, not before desk's first frame
            from rich.markdown import Markdown

            body.update(Markdown(text))
        else:
            body.update(Text(text))
        body.display = bool(text)
        outcome = self.query_one(".outcome", Static)
        outcome.update(self.outcome)
        outcome.display = bool(self.outcome)
        self.set_class(self.outcome.startswith("✖"), "-failed")
