"""The list of workspace files an ``@`` mention being typed may name, just above the prompt box.

:class:`desk.controllers.mentions.MentionController` mounts it beside the prompt box and drives
it; like the slash-command hints it floats over the widgets above (``overlay: screen``), so
showing or hiding it moves nothing. It is as wide as the prompt box, its background filling every
row: nothing of the transcript under it shows beside a short path.
"""

from __future__ import annotations

from collections.abc import Sequence

from textual.content import Content
from textual.widget import Widget
from textual.widgets import Static

from desk.widgets._css import css_beside


class MentionList(Static):
    """Matching paths, the selected one marked (hidden when no mention is being typed)."""

    DEFAULT_CSS = css_beside(__file__)

    MAX_ROWS = 8
    """Most paths listed at once (a window follows the selected one)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)
        self.display = False
        self._height = 0
        self._place: tuple[int, int, int] | None = None  # x, y, width
        self.lines: list[str] = []
        """The plain text of the rows shown (empty while hidden), for tests and tools."""

    def show_paths(self, query: str, paths: Sequence[str], selected: int | None = None) -> None:
        """List ``paths`` matching ``@query`` (``selected``, an index into them, is marked);
        no paths: one line saying nothing matches."""
        if not paths:
            line = f"no file in the workspace matches @{query}"
            self._show([Content.styled(line, "$text-warning")], [line])
            return
        start = 0
        if len(paths) > self.MAX_ROWS:
            focus = selected or 0
            start = min(max(0, focus - self.MAX_ROWS + 1), len(paths) - self.MAX_ROWS)
        rows: list[Content] = []
        lines: list[str] = []
        for index, path in list(enumerate(paths))[start : start + self.MAX_ROWS]:
            chosen = index == selected
            text = f"{'›' if chosen else ' '} @{path}"
            rows.append(Content.styled(text, "bold $text-accent" if chosen else "$text"))
            lines.append(text)
        hidden = len(paths) - min(len(paths), self.MAX_ROWS)
        tail = f"  Tab inserts{' the next' if selected is not None else ''}"
        tail += f" · {hidden} more: keep typing" if hidden else ""
        rows.append(Content.styled(tail, "$text-muted"))
        lines.append(tail)
        self._show(rows, lines)

    def hide(self) -> None:
        """Hide the list."""
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
        """Put the list just above ``anchor``'s box, at its left edge and as wide as it (after
        :meth:`show_paths`; the offset is relative to the parent's content area, see the CSS)."""
        container = self.parent
        if not isinstance(container, Widget) or anchor.region.height == 0:
            return  # not laid out yet
        origin = container.content_region.offset
        x = anchor.region.x - origin.x
        y = anchor.region.y - origin.y - self._height
        width = anchor.region.width
        if self._place != (x, y, width):
            self._place = (x, y, width)
            self.styles.offset = (x, y)
            self.styles.width = width
