"""The line at the top of a long resumed transcript: "N earlier messages · show more"."""

from __future__ import annotations

from typing import ClassVar

from textual import events
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import Static

from desk.widgets._css import css_beside


class EarlierMessages(Static, can_focus=True):
    """Click or Enter to show more. Posts :class:`EarlierMessages.Requested`.

    Args:
        count: how many messages are not shown.
    """

    FOCUS_ON_CLICK = False
    """A click does what it does without taking the focus from the prompt box (Shift+Tab or
    Tab from another control still reach it)."""

    DEFAULT_CSS = css_beside(__file__)

    BINDINGS: ClassVar[list[BindingType]] = [Binding("enter", "request", "Show more")]

    class Requested(Message):
        """The person asked for the earlier messages."""

    def __init__(self, count: int) -> None:
        super().__init__(self.label(count), markup=False)
        self.count = count
        """How many messages are not shown."""

    @staticmethod
    def label(count: int) -> str:
        """``"▲ 9,800 earlier messages · show more"``."""
        noun = "message" if count == 1 else "messages"
        return f"▲ {count:,} earlier {noun} · show more"

    def action_request(self) -> None:
        """Ask for more."""
        self.post_message(self.Requested())

    def on_click(self, event: events.Click) -> None:
        """A click asks for more."""
        event.stop()
        self.action_request()
