"""A one-line label that knows what it last painted, so a caller can wait for a frame to show it
(:mod:`desk.widgets._paint_waiters`): had the caller gone on at once, the next frame would also
carry whatever was queued after it, e.g. a long reply drawn again, and come out hundreds of
milliseconds later on a busy machine.
"""

from __future__ import annotations

from textual.content import Content
from textual.geometry import Region
from textual.strip import Strip
from textual.widgets import Static

from desk.widgets._paint_waiters import PaintWaiters


class PaintedLabel(Static):
    """A :class:`~textual.widgets.Static` of plain text (no markup) whose paints are known.

    Args:
        text: the first text.
        classes: CSS classes.
    """

    def __init__(self, text: str = "", *, classes: str | None = None) -> None:
        super().__init__(text, classes=classes, markup=False)
        self.text = text
        """The text set last (:meth:`show`)."""
        self.painted: str | None = None
        """The text the last frame drew (None: never drawn)."""
        self._paints = PaintWaiters(self, lambda: self.up_to_date)
        self._text_style = ""

    def show(self, text: str, *, style: str = "") -> None:
        """Show ``text`` from the next frame on (the label's size never depends on it: no
        layout of the screen is asked for).

        Args:
            text: plain text.
            style: a Textual style for all of it (``"$text-accent bold"``); "" for the
                label's own.
        """
        if text != self.text or style != self._text_style:
            self.text, self._text_style = text, style
            self.update(Content.styled(text, style) if style else text, layout=False)

    @property
    def up_to_date(self) -> bool:
        """True when the last frame drawn holds the text set last."""
        return self.painted == self.text

    async def wait_painted(self) -> None:
        """Return once a frame holding the text set last has been drawn (at once when it has).

        Cancelled with its caller (e.g. by ``asyncio.wait_for``); never raises otherwise.
        """
        await self._paints.wait()

    def render_lines(self, crop: Region) -> list[Strip]:
        # Drawn into a frame (the compositor's call): ``render`` alone is no proof, as layout
        # may call it to measure the label before any frame holds its text.
        self.painted = self.text
        self._paints.drawn()
        return super().render_lines(crop)
