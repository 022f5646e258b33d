"""One prompt the person sent, as shown in the transcript (sent, queued or dropped)."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Button, Static

from desk.widgets._css import css_beside
from tui_gateway.text import terminal_safe


class UserPrompt(Widget):
    """A prompt block.

    Args:
        turn_id: the turn the prompt starts.
        text: the prompt as typed.
        queued: True when it waits behind a running turn.
    """

    DEFAULT_CSS = css_beside(__file__)

    status: reactive[str] = reactive("sent")
    """``sent``, ``queued``, ``dropped``, ``steer`` (waiting for the running turn's next
    step) or ``steered`` (the running turn took it there)."""

    detail: reactive[str] = reactive("")
    """Why a prompt was dropped."""

    position: reactive[int] = reactive(0)
    """Place in the queue while queued (1 = next), 0 when unknown."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("delete", "remove", "Remove", show=False),
    ]

    class RemoveRequested(Message):
        """The person asked to remove this queued prompt (its ✕, or Delete)."""

        def __init__(self, turn_id: str) -> None:
            super().__init__()
            self.turn_id = turn_id
            """The queued prompt's turn."""

    def __init__(self, turn_id: str, text: str, *, queued: bool = False) -> None:
        super().__init__(id=f"prompt-{turn_id}")
        self.turn_id = turn_id
        """The turn this prompt starts."""
        self.text = text
        """The prompt text."""
        self.set_reactive(UserPrompt.status, "queued" if queued else "sent")

    def compose(self) -> ComposeResult:
        if self.status == "queued":  # only a prompt queued when sent can be removed
            yield Button("✕", classes="remove", compact=True, tooltip="remove from the queue")
        yield Static(terminal_safe(self.text), classes="prompt-text", markup=False)
        yield Static("", classes="prompt-status", markup=False)

    def on_mount(self) -> None:
        self._show_status()

    def watch_status(self) -> None:
        self._show_status()

    def watch_detail(self) -> None:
        self._show_status()

    def watch_position(self) -> None:
        self._show_status()

    def action_remove(self) -> None:
        """Delete (or the ✕): ask to remove the prompt while it is queued."""
        if self.status == "queued":
            self.post_message(self.RemoveRequested(self.turn_id))

    def on_button_pressed(self, event: Button.Pressed) -> None:
        """The ✕ button."""
        event.stop()
        self.action_remove()

    def _show_status(self) -> None:
        label = next(self.query(".prompt-status").results(Static), None)
        if label is None:
            return  # not composed yet; on_mount shows it
        self.set_class(self.status == "queued", "-queued")
        self.set_class(self.status == "dropped", "-dropped")
        self.set_class(self.status in ("steer", "steered"), "-steer")
        if self.status == "steer":
            label.update("steers the running turn at its next step (never cuts a reply)")
        elif self.status == "steered":
            label.update("added while the turn ran")
        elif self.status == "queued":
            place = f" #{self.position}" if self.position else ""
            label.update(
                f"queued{place} · runs when the current turn ends · ✕ or Delete removes it"
            )
        elif self.status == "dropped":
            label.update(terminal_safe(f"not sent: {self.detail}" if self.detail else "not sent"))
        else:
            label.update("")
