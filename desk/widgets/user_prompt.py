"""One prompt the person sent, as shown in the transcript (sent, queued or dropped)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Static

from desk.widgets._css import css_beside


class UserPrompt(Widget):
    """A prompt block.

    Args:
        turn_id: the turn the prompt starts.
        text: the prompt as typed.
        queued: True when it waits behind a running turn.
    """

    DEFAULT_CSS = css_beside(__file__)

    status: reactive[str] = reactive("sent")
    """``sent``, ``queued`` or ``dropped``."""

    detail: reactive[str] = reactive("")
    """Why a prompt was dropped."""

    def __init__(self, turn_id: str, text: str, *, queued: bool = False) -> None:
        super().__init__(id=f"prompt-{turn_id}")
        self.turn_id = turn_id
        """The turn this prompt starts."""
        self.text = text
        """The prompt text."""
        self.set_reactive(UserPrompt.status, "queued" if queued else "sent")

    def compose(self) -> ComposeResult:
        yield Static(self.text, classes="prompt-text", markup=False)
        yield Static("", classes="prompt-status", markup=False)

    def on_mount(self) -> None:
        self._show_status()

    def watch_status(self) -> None:
        self._show_status()

    def watch_detail(self) -> None:
        self._show_status()

    def _show_status(self) -> None:
        label = next(self.query(".prompt-status").results(Static), None)
        if label is None:
            return  # not composed yet; on_mount shows it
        self.set_class(self.status == "queued", "-queued")
        self.set_class(self.status == "dropped", "-dropped")
        if self.status == "queued":
            label.update("queued · runs when the current turn ends")
        elif self.status == "dropped":
            label.update(f"not sent: {self.detail}" if self.detail else "not sent")
        else:
            label.update("")
