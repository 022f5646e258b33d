"""A one-line label that knows what it last painted, so a caller can wait for a frame to show it.

Textual renders a widget's content while it composes a frame (``Screen._on_timer_update``).
:class:`PaintedLabel` records the text drawn into a frame (``render_lines``, the compositor's
call; ``render`` may also run to measure it), and a waiter is released
once the screen is done with that update (its refresh callbacks run when it is idle again):
by then the frame holding the text has gone out. ``call_after_refresh`` is no such
proof: its callbacks run when the screen is idle, which may be before the label's own repaint
reached the screen (then the next frame also carries whatever was queued after the callback,
e.g. a long reply drawn again, and comes out hundreds of milliseconds later on a busy machine).
"""

from __future__ import annotations

import asyncio

from textual.content import Content
from textual.geometry import Region
from textual.strip import Strip
from textual.widgets import Static


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
        self._waiters: list[asyncio.Future[None]] = []
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
        if self.up_to_date:
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        finally:
            if waiter in self._waiters:
                self._waiters.remove(waiter)

    def render_lines(self, crop: Region) -> list[Strip]:
        # Drawn into a frame (the compositor's call): ``render`` alone is no proof, as layout
        # may call it to measure the label before any frame holds its text.
        self.painted = self.text
        if self._waiters:  # released once the screen is done with the frame being made
            self.call_after_refresh(self._release)
        return super().render_lines(crop)

    def _release(self) -> None:
        if not self.up_to_date:
            return  # changed again meanwhile: the next paint releases
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)
