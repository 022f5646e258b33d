"""Paint a change at once instead of at the next tick of Textual's frame timer.

Textual paints from a timer: a widget's refresh marks it dirty, the screen resumes its update
timer when its queue is empty, and the frame goes out at the timer's next tick (every 1/60 s,
counted from when the timer first ran). A change that must be seen at once (a turn's end:
"idle", the keys that now work, the reply's last words) waited up to a whole period for that
tick, and on a busy machine a scheduler wake-up more: 8 ms on average, 17 ms and more at worst,
of a 50 ms budget.

:func:`frame_now` asks the screen to compose its frame as soon as the current message has been
handled: the same work the timer's tick does (``Screen._on_timer_update``: layout, then the
dirty widgets), only without waiting for the tick. Used for state changes the person waits for,
never for a stream's deltas (those keep the timer's pace, which bounds the frames a fast stream
costs). Should a Textual release rename that method, this does nothing and the timer paints as
before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

from textual.dom import NoScreen
from textual.screen import Screen
from textual.widget import Widget

_TICK = "_on_timer_update"
"""The screen method Textual's update timer calls on each tick."""


def frame_now_of(widget: Widget) -> None:
    """:func:`frame_now` for the screen ``widget`` is on; nothing when it is on none (the
    app is being torn down: a turn's end handled as the desk quits)."""
    try:
        screen = widget.screen
    except NoScreen:
        return
    frame_now(screen)


def frame_now(screen: Screen[object]) -> None:
    """Have ``screen`` paint what changed right after the message being handled, once.

    A no-op when the screen is not the one shown (a modal above it paints its own frames) or
    when this Textual has no such tick to call.

    Args:
        screen: the screen whose frame is due (usually ``widget.screen``).
    """
    tick = getattr(screen, _TICK, None)
    if callable(tick):
        screen.call_next(_paint, screen, cast(Callable[[], None], tick))


def _paint(screen: Screen[object], tick: Callable[[], None]) -> None:
    # Each widget that changed hands its repaint to the screen from its own queue (an
    # ``Update`` message, posted when that widget is next idle): those widgets ran before this
    # callback, so their messages wait in the screen's queue now. One more hop through that
    # queue paints after them (painting here sent "idle" out above the busy keys).
    screen.call_later(_paint_now, screen, tick)


def _paint_now(screen: Screen[object], tick: Callable[[], None]) -> None:
    if screen.is_current and screen.is_attached:
        tick()  # pauses the update timer; the next change resumes it as usual
