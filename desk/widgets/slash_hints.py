"""The small list of matching slash commands shown just above the prompt box.

:class:`desk.widgets.prompt_input.PromptInput` mounts it beside itself and drives it; it floats
over the widgets above (``overlay: screen``), so showing or hiding it moves nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

from textual.content import Content
from textual.widget import Widget
from textual.widgets import Static

from desk.slash import SlashCommand
from desk.widgets._css import css_beside


class SlashHints(Static):
    """Matching commands with their usage and help, or a one-line message (hidden when idle)."""

    DEFAULT_CSS = css_beside(__file__)

    MAX_ROWS = 8
    """Most commands listed at once (a window follows the selected one)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)
        self.display = False
        self._height = 0
        self._offset: tuple[int, int] | None = None
        self.lines: list[str] = []
        """The plain text of the rows shown (empty while hidden), for tests and tools."""

    def show_commands(self, commands: Sequence[SlashCommand], selected: int | None = None) -> None:
        """List ``commands`` (``selected``, an index into them, is highlighted)."""
        start = 0
        if len(commands) > self.MAX_ROWS:
            focus = selected or 0
            start = min(max(0, focus - self.MAX_ROWS + 1), len(commands) - self.MAX_ROWS)
        shown = list(enumerate(commands))[start : start + self.MAX_ROWS]
        width = max(len(command.usage) for _index, command in shown)
        rows: list[Content] = []
        lines: list[str] = []
        for index, command in shown:
            mark = "›" if index == selected else " "
            usage = f"{mark} {command.usage:<{width}}"
            style = "bold $text-accent" if index == selected else "$text"
            rows.append(Content.assemble((usage, style), ("  " + command.help, "$text-muted")))
            lines.append(f"{usage}  {command.help}".rstrip())
        hidden = len(commands) - len(shown)
        if hidden:
            more = f"  … {hidden} more (keep typing, or Tab to go through them)"
            rows.append(Content.styled(more, "$text-muted"))
            lines.append(more)
        self._show(rows, lines)

    def show_message(self, message: str) -> None:
        """Show one line, e.g. ``no command starts with /xyz``."""
        self._show([Content.styled(message, "$text-warning")], [message])

    def hide(self) -> None:
        """Hide the list (nothing to show)."""
        self.lines = []
        if self.display:
            self.display = False

    def _show(self, rows: list[Content], lines: list[str]) -> None:
        self.lines = lines
        self.update(Content("\n").join(rows))
        self._height = len(rows) + self.styles.gutter.height
        self.styles.height = self._height
        self.display = True

    def place_above(self, anchor: Widget) -> None:
        """Put the list just above ``anchor``'s box (its border included), at its left edge.

        The list is absolutely positioned in its parent (see the CSS), so the offset is relative
        to the parent's content area; call this after :meth:`show_commands` / :meth:`show_message`.
        """
        container = self.parent
        if not isinstance(container, Widget) or anchor.region.height == 0:
            return  # not laid out yet
        origin = container.content_region.offset
        x = anchor.region.x - origin.x
        y = anchor.region.y - origin.y - self._height
        if self._offset != (x, y):
            self._offset = (x, y)
            self.styles.offset = (x, y)
