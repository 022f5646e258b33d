"""One line of the queue above the prompt box: its place, its text, and what can be done to it.

``#2  reply with the summary   ✎ ✕``; a prompt not sent when the desk last closed reads
``not sent  …   ↻ ✎ ✕``; a queued ``/compress`` has no ✎. The buttons post
:class:`QueuedItem.Chosen`; the line is one row, its text cut to fit.
"""

from __future__ import annotations

from typing import Literal

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Static

from contract.text import terminal_safe
from desk.queue_state import QueueEntry
from desk.widgets._css import css_beside
from desk.widgets.click_button import ClickButton

QueueAction = Literal["edit", "remove", "resend"]
"""What a queue line's button asks for."""


def one_line(text: str) -> str:
    """The prompt on one line (its line breaks shown as ``⏎``), made safe to show."""
    return " ⏎ ".join(terminal_safe(text).strip().splitlines())


class QueuedItem(Horizontal):
    """A queued prompt's line.

    Args:
        entry: the prompt it shows.
        position: its place in the queue (1 = next); 0 for a held prompt.
    """

    DEFAULT_CSS = css_beside(__file__)

    class Chosen(Message):
        """A button of the line was pressed.

        Args:
            key: the line's key (a turn id, or ``held-N``).
            action: what the button asks for.
        """

        def __init__(self, key: str, action: QueueAction) -> None:
            super().__init__()
            self.key = key
            """The line's key."""
            self.action: QueueAction = action
            """What the button asks for."""

    def __init__(self, entry: QueueEntry, position: int) -> None:
        super().__init__(classes=f"-{entry.kind}")
        self.entry = entry
        """The prompt it shows."""
        self._position = position
        self._editing = False

    def compose(self) -> ComposeResult:
        yield Static(self._place(), classes="place", markup=False)
        yield Static(one_line(self.entry.text), classes="text", markup=False)
        yield Static(self._note(), classes="editing", markup=False)
        if self.entry.kind == "held":
            yield ClickButton("↻", classes="resend", compact=True, tooltip="queue it again")
        if self.entry.editable:
            yield ClickButton("✎", classes="edit", compact=True, tooltip="edit it in the box")
        yield ClickButton("✕", classes="remove", compact=True, tooltip="remove it")

    def _place(self) -> str:
        return "not sent" if self.entry.kind == "held" else f"#{self._position}"

    def _note(self) -> str:
        # A prompt not sent when desk last closed is sent by Enter once edited; a queued one
        # keeps its place in the queue
        done = "Enter sends it" if self.entry.kind == "held" else "Enter saves it here"
        return (
            f"✎ in the prompt box · {done} · Enter on an empty box cancels" if self._editing else ""
        )

    def show(self, position: int, *, editing: bool) -> None:
        """Show the line's place and text as they are now, and whether the box edits it.

        A line not composed yet (two changes of the queue shown at once, the first still
        mounting it) keeps them and draws them when it is composed."""
        self._position = position
        self._editing = editing
        self.set_class(editing, "-editing")
        places = self.query(".place").results(Static)
        place = next(places, None)
        if place is None:
            return
        place.update(self._place())
        self.query_one(".text", Static).update(one_line(self.entry.text))
        self.query_one(".editing", Static).update(self._note())

    def on_button_pressed(self, event: ClickButton.Pressed) -> None:
        """✎, ✕ or ↻."""
        event.stop()
        for action in ("edit", "remove", "resend"):
            if event.button.has_class(action):
                self.post_message(self.Chosen(self.entry.key, action))
