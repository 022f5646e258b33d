"""Rich renderables drawn through Textual's Line API: rendered once per width, then cached.

A ``Static`` holding a Rich renderable renders it again for every height query and repaint;
a long reply then spends its time re-highlighting code it already showed. Here the lines for a
width are made once (:func:`render_strips`) and kept until the width or the theme changes.
"""

from __future__ import annotations

import contextlib

from rich.console import RenderableType
from rich.segment import Segment
from rich.theme import Theme
from textual.app import App
from textual.geometry import Region, Size
from textual.strip import Strip

from desk.lexers import fences
from desk.widgets._one_layout import one_layout_virtual_size
from desk.widgets._pass_style import PassStyle
from desk.widgets._remeasure import Remeasured

LIGHT_STYLES = Theme(
    {
        "markdown.code": "bold #8a3b00 on #e8e8e4",
        "markdown.block_quote": "#5a3e8a",
        "markdown.link": "#005a9e",
    }
)
"""Rich's Markdown styles that do not read on a light background, replaced in light themes."""


def render_strips(app: App[object], renderable: RenderableType, width: int) -> list[Strip]:
    """Render ``renderable`` at ``width`` cells into one strip per line, in the app's theme.

    Args:
        app: the running app (its console, and whether its theme is light).
        renderable: any Rich renderable.
        width: the width in cells (at least 1 is used).

    Returns:
        the lines, unpadded.
    """
    console = app.console
    options = console.options.update_width(max(1, width))
    light = not app.current_theme.dark
    with console.use_theme(LIGHT_STYLES) if light else contextlib.nullcontext():
        lines = console.render_lines(renderable, options, pad=False)
    return [Strip(Segment.simplify(line)) for line in lines]


class MarkdownChunk(Remeasured):
    """Rendered text (any Rich renderable), cached per width until :meth:`update`.

    Args:
        renderable: what to show.
        classes: CSS classes.
    """

    virtual_size = one_layout_virtual_size()  # see desk.widgets._one_layout

    DEFAULT_CSS = """
    MarkdownChunk { height: auto; }
    """

    def __init__(self, renderable: RenderableType, *, classes: str | None = None) -> None:
        super().__init__(classes=classes)
        self.renderable = renderable
        """What is shown."""
        self._width = -1
        self._strips: list[Strip] = []
        self._shown: tuple[int, list[Strip]] | None = None  # the last lines rendered
        self._held = False  # showing lines older than the renderable (:meth:`hold`)
        self._trim_top = False
        self._pass_style = PassStyle(self)

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, self._theme_changed)

    def _theme_changed(self, _theme: object) -> None:
        self._width, self._held = -1, False  # the light-theme styles may apply now, or not
        self.refresh(layout=True)

    def update(self, renderable: RenderableType, *, trim_top: bool = False) -> None:
        """Show ``renderable`` instead (rendered on the next paint).

        Args:
            renderable: what to show.
            trim_top: leave out its first row (the top padding of a code block that continues
                one shown above).
        """
        self.renderable = renderable
        self._trim_top = trim_top
        self._width, self._held = -1, False
        self.refresh(layout=True)

    def hold(self) -> None:
        """Keep showing the lines last rendered, not a renderable set since and not rendered
        yet, until :meth:`update` or :meth:`release` (or a new width). A stopped reply's
        text is drawn whole once "idle" is out: rendering its last pieces in the frame that
        says "idle" cost that frame up to 10 ms of the UI thread."""
        if self._width < 0 and self._shown is not None:
            (self._width, self._strips), self._held = self._shown, True

    def release(self) -> None:
        """Render the renderable on the next paint if :meth:`hold` kept older lines."""
        if self._held:
            self._width, self._held = -1, False
            self.refresh(layout=True)

    def _lines(self, width: int) -> list[Strip]:
        if width != self._width:
            strips = render_strips(self.app, self.renderable, width)
            self._strips = strips[1:] if self._trim_top and len(strips) > 1 else strips
            self._width, self._held = width, False
            self._shown = (width, self._strips)
        return self._strips

    def redraw_code(self, language: str) -> None:
        """Render again on the next paint if what is shown has a code block in ``language``
        (its lexer became ready: it was drawn plain)."""
        if fences(str(getattr(self.renderable, "markup", "")), language):
            self._width, self._held = -1, False
            self.refresh(layout=True)

    def drawn(self) -> tuple[int, list[Strip]] | None:
        """The width the renderable was last rendered at and its lines as shown (the top row
        left out with ``trim_top``), or None when it has not been rendered since
        :meth:`update` (or shows older lines, :meth:`hold`)."""
        return (self._width, self._strips) if self._width >= 0 and not self._held else None

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        """The rendered height at ``width``."""
        return len(self._lines(width))

    def render_lines(self, crop: Region) -> list[Strip]:
        """The rows of ``crop`` (the widget's style looked up once for all of them)."""
        return self._pass_style.during(lambda: super(MarkdownChunk, self).render_lines(crop))

    def render_line(self, y: int) -> Strip:
        """Line ``y`` of the rendering, on the widget's own colours."""
        strips = self._lines(self.content_size.width)
        if y >= len(strips):
            return Strip.blank(self.content_size.width, self._pass_style.style)
        return strips[y].apply_style(self._pass_style.style)
