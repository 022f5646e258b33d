"""The "new output below" line under a transcript the person scrolled up in.

The view shows it while its transcript does not follow the newest content
(:class:`desk.widgets.transcript.Transcript.Following`) and hides it once it follows again. It
says whether anything was added below since, and how to go back: End (or a click on it).
"""

from __future__ import annotations

from textual import events
from textual.message import Message
from textual.widgets import Static

from desk.widgets._css import css_beside

NEW_BELOW = "↓ new output below · End follows it"
"""The marker while content was added below what is shown."""

MORE_BELOW = "↓ scrolled up · End goes back to the end"
"""The marker while nothing new came since the person scrolled up."""


class FollowMarker(Static):
    """One line at the foot of the view; hidden while the transcript follows."""

    DEFAULT_CSS = css_beside(__file__)

    class Clicked(Message):
        """The person clicked the marker: go back to the end."""

    def __init__(self) -> None:
        super().__init__("", markup=False)

    def show_state(self, following: bool, new_below: bool) -> None:
        """Hide the marker while following, else say whether there is new output below."""
        self.set_class(not following, "-shown")
        self.set_class(new_below, "-new")
        self.update(NEW_BELOW if new_below else MORE_BELOW)

    @property
    def shown(self) -> bool:
        """True while the marker is on screen."""
        return self.has_class("-shown")

    def on_click(self, event: events.Click) -> None:
        """A click goes back to the end."""
        event.stop()
        self.post_message(self.Clicked())
