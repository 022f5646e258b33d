"""The prompt box: a multi-line text area where Enter sends and Ctrl+J inserts a new line.

Up on the first line recalls earlier prompts and Down on the last line comes back
(:class:`desk.prompt_history.PromptHistory`).
"""

from __future__ import annotations

from typing import ClassVar

from textual import events
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import TextArea

from desk.prompt_history import PromptHistory
from desk.widgets._css import css_beside


class PromptInput(TextArea):
    """Where the person types. Posts :class:`PromptInput.Submitted` on Enter.

    The text is not cleared on submit: the app clears it once the gateway accepted the prompt,
    so a refused prompt (too long, gateway closing) is not lost.
    """

    DEFAULT_CSS = css_beside(__file__)

    BINDINGS: ClassVar[list[BindingType]] = [
        # Shown in the footer; the keys themselves are handled in _on_key (see there).
        Binding("enter", "submit", "Send"),
        Binding("ctrl+j,shift+enter", "newline", "New line", key_display="^j"),
    ]

    SUBMIT_KEYS: ClassVar[frozenset[str]] = frozenset({"enter"})
    """Keys that send the prompt."""
    NEWLINE_KEYS: ClassVar[frozenset[str]] = frozenset({"ctrl+j", "shift+enter"})
    """Keys that insert a line break."""

    class Submitted(Message):
        """The person pressed Enter.

        Args:
            text: the prompt box's text.
        """

        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text
            """The prompt box's text."""

    def __init__(self, *, id: str | None = None, placeholder: str = "") -> None:
        super().__init__(
            id=id,
            placeholder=placeholder,
            soft_wrap=True,
            tab_behavior="focus",
            show_line_numbers=False,
            compact=True,
        )
        self.prompt_history = PromptHistory()
        """Prompts sent from this box (Up on the first line recalls them)."""

    async def _on_key(self, event: events.Key) -> None:
        # Enter and Ctrl+J are handled here, in this widget's own queue, after the keys typed
        # before them: a binding (priority ones run as the key arrives at the app) could read
        # the text before the last typed characters were inserted.
        if event.key in self.SUBMIT_KEYS:
            event.stop()
            event.prevent_default()
            self.action_submit()
        elif event.key in self.NEWLINE_KEYS:
            event.stop()
            event.prevent_default()
            self.action_newline()
        else:
            await super()._on_key(event)

    def action_submit(self) -> None:
        """Send the text to whoever listens (the app), and remember it."""
        self.prompt_history.add(self.text)
        self.post_message(self.Submitted(self.text))

    def action_cursor_up(self, select: bool = False) -> None:
        """Up: on the first (visual) line recall the previous prompt, else move the cursor."""
        if not select and self.navigator.is_first_wrapped_line(self.cursor_location):
            recalled = self.prompt_history.older(self.text)
            if recalled is not None:
                self._show_recalled(recalled)
                return
        super().action_cursor_up(select)

    def action_cursor_down(self, select: bool = False) -> None:
        """Down: on the last line while browsing history show the next prompt (then the draft)."""
        if (
            not select
            and self.prompt_history.browsing
            and self.navigator.is_last_wrapped_line(self.cursor_location)
        ):
            recalled = self.prompt_history.newer()
            if recalled is not None:
                self._show_recalled(recalled)
                return
        super().action_cursor_down(select)

    def _show_recalled(self, text: str) -> None:
        self.text = text
        self.move_cursor(self.document.end)

    def action_newline(self) -> None:
        """Insert a line break at the cursor."""
        self.insert("\n")
