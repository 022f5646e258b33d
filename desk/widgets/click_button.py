"""A button that takes every click: press and release in the same place, however quick.

Textual's :class:`~textual.widgets.Button` drops a click that comes within its 0.2 s "active"
effect of the press before (``Button._on_click`` checks the ``-active`` class), so a second
quick click did nothing; and Textual makes a click only when the widget under the pointer at
the release is the one under it at the press, so a press and release in the same place were
lost when the screen moved between the two (a panel opening, a transcript growing under load):
the app presses the button for that release itself (:class:`ButtonPresses`, called by
:meth:`desk.app.DeskApp.on_event`).

It does not take the focus on a click either: the prompt box keeps the keyboard (Tab and
Shift+Tab still reach it, and Enter or Space press it then).
"""

from __future__ import annotations

from textual import events
from textual.app import App
from textual.errors import NoWidget
from textual.geometry import Region
from textual.widget import Widget
from textual.widgets import Button


class ClickButton(Button):
    """A :class:`~textual.widgets.Button` that takes every click (see the module docstring)."""

    FOCUS_ON_CLICK = False
    """A click presses it and leaves the focus where it was."""

    async def _on_click(self, event: events.Click) -> None:
        event.stop()
        if event.chain == 1 or not self.has_class("-active"):  # a double click is one press
            self.press()


class ButtonPresses:
    """Presses a :class:`ClickButton` for a release in the place of its press that Textual made
    no click of (the widget under the pointer changed in between). UI thread only."""

    def __init__(self) -> None:
        self._pressed: tuple[ClickButton, Region] | None = None

    def mouse_down(self, widget: Widget | None) -> None:
        """A mouse press on ``widget`` (the widget under the pointer as the press arrived)."""
        self._pressed = (widget, widget.region) if isinstance(widget, ClickButton) else None

    def mouse_up(self, event: events.MouseUp, widget: Widget | None) -> None:
        """A mouse release over ``widget``: press the button pressed at this place if Textual
        makes no click of it."""
        pressed, self._pressed = self._pressed, None
        if pressed is None:
            return
        button, region = pressed
        if widget is button or not button.is_attached:
            return  # Textual makes the click itself (or the button is gone)
        if region.contains(event.screen_x, event.screen_y):
            button.press()


def widget_under(app: App[int], event: events.MouseEvent) -> Widget | None:
    """The widget under the pointer when ``event`` happened (None: nothing there)."""
    try:
        return app.get_widget_at(event.screen_x, event.screen_y)[0]
    except NoWidget:
        return None
