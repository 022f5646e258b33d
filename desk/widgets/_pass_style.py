"""A widget's style, looked up once per render pass instead of once per row.

``Widget.rich_style`` walks the widget's ancestors to blend their colours; a widget that
applies it to every row it renders paid that walk per row (as much as the row itself cost).
"""

from __future__ import annotations

from collections.abc import Callable

from rich.style import Style
from textual.strip import Strip
from textual.widget import Widget


class PassStyle:
    """The style of one widget for the render pass under way.

    Args:
        widget: the widget whose ``rich_style`` is kept.
    """

    def __init__(self, widget: Widget) -> None:
        self._widget = widget
        self._style: Style | None = None

    def during(self, render: Callable[[], list[Strip]]) -> list[Strip]:
        """Run ``render`` (the widget's ``render_lines``) with the style looked up once."""
        self._style = self._widget.rich_style
        try:
            return render()
        finally:
            self._style = None

    @property
    def style(self) -> Style:
        """The widget's style: the pass's, or looked up now outside a pass."""
        style = self._style
        return self._widget.rich_style if style is None else style


__all__ = ["PassStyle"]
