"""Waiting for a frame that holds a widget's latest content (shared by the widgets that offer it).

A widget records what it draws into a frame in its ``render_lines`` (the compositor's call;
``render`` may also run to measure it) and calls :meth:`PaintWaiters.drawn`; a waiter is
released once the screen is done with that update (its refresh callbacks run when it is idle
again): by then the frame holding the content has gone out. ``call_after_refresh`` alone is no
such proof: its callbacks run when the screen is idle, which may be before the widget's own
repaint reached the screen.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from textual.widget import Widget


class PaintWaiters:
    """The waiters for one widget's next frame.

    Args:
        widget: the widget whose frames are waited for.
        up_to_date: True when the last frame drawn holds the widget's latest content.
    """

    def __init__(self, widget: Widget, up_to_date: Callable[[], bool]) -> None:
        self._widget = widget
        self._up_to_date = up_to_date
        self._waiters: list[asyncio.Future[None]] = []

    async def wait(self) -> None:
        """Return once a frame holding the latest content has been drawn (at once when it
        has). Cancelled with its caller (e.g. by ``asyncio.wait_for``); never raises otherwise.
        """
        if self._up_to_date():
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        finally:
            if waiter in self._waiters:
                self._waiters.remove(waiter)

    def drawn(self) -> None:
        """The widget drew its content into the frame being made (from ``render_lines``)."""
        if self._waiters:  # released once the screen is done with that frame
            self._widget.call_after_refresh(self._release)

    def _release(self) -> None:
        if not self._up_to_date():
            return  # changed again meanwhile: the next paint releases
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)
