"""The confirmation before a session is deleted for good: Delete (y) or Cancel (n, Esc).

Its keys are answered in the app's own queue (:meth:`ConfirmDelete.take_key`, called by the
app as each key arrives), not in the queue of its focused button: the keys typed in the same
burst after the answer were already on their way to the button when the answer closed it, so
they were lost (and each closed it again, which popped the desk's own screen). Answered where
the keys arrive, the confirmation is gone before the app routes the next key, which reaches
the desk's screen as if the confirmation had never been there.
"""

from __future__ import annotations

from typing import ClassVar

from textual import events
from textual.app import ComposeResult
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

    PASSED_ON: ClassVar[frozenset[str]] = frozenset({"ctrl+q", "ctrl+c"})
    """Keys the confirmation leaves to the app: quit, and stop the running turn."""

    def __init__(self, title: str, *, running: bool = False) -> None:
        super().__init__()
        self.session_title = title
        """The session's title."""
        self.running = running
        """True when a turn of the session runs."""
        self.answer: bool | None = None
        """The answer once given (True: delete); None while it waits."""

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

    def take_key(self, event: events.Key) -> bool:
        """Act on a key as it arrives at the app, before the app routes it (the app calls this
        while the confirmation is on top): ``y`` deletes, ``n`` or Esc cancels, Enter answers
        with the focused button, Tab and Shift+Tab move between the buttons, and any other key
        (a prompt meant for the input, say) cancels: a deletion takes an explicit ``y``, never a
        stray letter. The key that answers does nothing else.

        Returns:
            True when the key was taken (the app then routes it nowhere); False for the
            app's quit and stop keys, and once the confirmation is answered.
        """
        if self.answer is not None or event.key in self.PASSED_ON:
            return False
        key = event.key
        if key in ("tab", "shift+tab"):
            if key == "tab":
                self.focus_next()
            else:
                self.focus_previous()
        elif key in ("left", "right"):
            pass  # the buttons sit in one row: nothing to move to but with Tab
        elif key == "enter" and self.focused is not None:
            self._answer(self.focused.id == "confirm-delete")
        else:
            self._answer(key == "y")
        return True

    def on_key(self, event: events.Key) -> None:
        """A key that reached the confirmation without passing :meth:`take_key` (an app that
        does not call it) answers the same way."""
        if self.take_key(event):
            event.stop()
            event.prevent_default()

    def _answer(self, delete: bool) -> None:
        """Close with the answer, once."""
        if self.answer is None:
            self.answer = delete
            self.dismiss(delete)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        """The buttons answer like the keys."""
        event.stop()
        self._answer(event.button.id == "confirm-delete")
