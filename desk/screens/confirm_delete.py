"""The confirmation before a session is deleted for good: Delete (y) or Cancel (n, Esc)."""

from __future__ import annotations

from typing import ClassVar

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from contract.text import terminal_safe
from desk.widgets._css import css_beside
from desk.widgets.click_button import ClickButton


class ConfirmDelete(ModalScreen[bool]):
    """Asks before deleting a session; dismisses with True to delete.

    Args:
        title: the session's title, shown in the question.
        running: True when a turn of the session runs (it will be stopped first).
    """

    DEFAULT_CSS = css_beside(__file__)

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Delete"),
        Binding("n,escape", "answer(False)", "Cancel"),
    ]

    def __init__(self, title: str, *, running: bool = False) -> None:
        super().__init__()
        self.session_title = title
        """The session's title."""
        self.running = running
        """True when a turn of the session runs."""

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            title = terminal_safe(self.session_title)
            yield Static(f"Delete “{title}”?", classes="question", markup=False)
            detail = "Its transcript is removed from the database for good."
            if self.running:
                detail += " Its running turn is stopped first."
            yield Static(detail, classes="detail", markup=False)
            with Horizontal(classes="choices"):
                yield ClickButton("y  Delete", id="confirm-delete", variant="error", compact=True)
                yield ClickButton("n  Cancel", id="confirm-cancel", compact=True)

    def on_mount(self) -> None:
        self.query_one("#confirm-cancel", Button).focus()

    SAFE_KEYS: ClassVar[frozenset[str]] = frozenset(
        {"y", "n", "escape", "enter", "tab", "shift+tab", "left", "right"}
    )
    """Keys that answer or move between the buttons; any other key cancels."""

    def on_key(self, event: events.Key) -> None:
        """Typing anything else (a prompt meant for the input, say) cancels: a deletion takes
        an explicit ``y``, never a stray letter."""
        if event.key not in self.SAFE_KEYS:
            event.stop()
            event.prevent_default()
            self.dismiss(False)

    def action_answer(self, delete: bool) -> None:
        """Close with the answer."""
        self.dismiss(delete)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        """The buttons answer like the keys."""
        event.stop()
        self.dismiss(event.button.id == "confirm-delete")
