"""What a tool call will change, inside its approval prompt: a diff, a new file, a command.

A scrollable box (at most a few lines tall; the mouse wheel or, once focused on purpose, the
arrow keys scroll it) holding the text syntax coloured: a unified diff line by line (added,
removed, hunk headers), a new file by its language (guessed from its name), a shell command as
shell. Every character goes through :func:`contract.text.terminal_safe` first: a file or a
command may hold control characters, and none of them reaches the terminal.
"""

from __future__ import annotations

from typing import Literal

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.content import Content, Span
from textual.highlight import highlight
from textual.widgets import Static

from contract.text import terminal_safe
from desk.widgets._css import css_beside

PreviewStyle = Literal["diff", "file", "shell"]
"""How the text is coloured."""

DIFF_STYLES: tuple[tuple[str, str], ...] = (
    ("+++", "bold $text-muted"),
    ("---", "bold $text-muted"),
    ("@@", "$text-accent"),
    ("+", "$text-success"),
    ("-", "$text-error"),
)
"""A diff line's colour by how it begins (first match)."""


def diff_content(diff: str) -> Content:
    """A unified diff (already made safe) coloured line by line."""
    spans: list[Span] = []
    start = 0
    for line in diff.split("\n"):
        end = start + len(line)
        style = next((s for prefix, s in DIFF_STYLES if line.startswith(prefix)), "")
        if style:
            spans.append(Span(start, end, style))
        start = end + 1
    return Content(diff, spans=spans)


class ChangePreview(VerticalScroll):
    """The change, coloured, in a box that scrolls.

    Args:
        text: the diff, the file's first lines, or the command (as sent: made safe here).
        style: how to colour it.
        path: the file's name, to guess its language (``file`` style).
    """

    DEFAULT_CSS = css_beside(__file__)

    FOCUS_ON_CLICK = False
    """A click (to scroll) leaves the focus in the prompt box."""

    def __init__(self, text: str, style: PreviewStyle, *, path: str | None = None) -> None:
        super().__init__(classes=f"-{style}")
        self.text = terminal_safe(text)
        """What is shown, made safe."""
        self._style: PreviewStyle = style
        self._path = path

    def content(self) -> Content:
        """The coloured text."""
        if self._style == "diff":
            return diff_content(self.text)
        if self._style == "shell":
            return highlight(self.text, language="bash")
        return highlight(self.text, path=self._path)

    def compose(self) -> ComposeResult:
        yield Static(self.content(), classes="change-text")
