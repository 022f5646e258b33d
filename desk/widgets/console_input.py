"""The console's command line: an input whose Up and Down walk through the lines sent before,
and whose Enter says when it was pressed (:class:`ConsoleInput.Entered`)."""

from __future__ import annotations

from typing import ClassVar

from textual import events
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import Input

from desk.widgets.key_order import run_own_binding, typed_text

HISTORY_LIMIT = 200
"""Command lines remembered."""


class ConsoleInput(Input):
    """A one-line input with history; Enter posts :class:`ConsoleInput.Entered`.

    Args:
        id: the widget id.
        placeholder: the hint shown while empty.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "history(-1)", "Previous", show=False),
        Binding("down", "history(1)", "Next", show=False),
    ]

    class Entered(Message):
        """Enter in the command line.

        Args:
            line: the line as it reads ("" for an empty one).
            key_time: when the Enter key was made (its ``Message.time``), or None when no
                key sent it: a stop key made after it is for the command it sends.
        """

        def __init__(self, line: str, key_time: float | None) -> None:
            super().__init__()
            self.line = line
            """The line."""
            self.key_time = key_time
            """When its Enter was made, or None."""

    def __init__(self, *, id: str | None = None, placeholder: str = "") -> None:
        super().__init__(id=id, placeholder=placeholder, compact=True)
        self.history: list[str] = []
        """Lines sent, oldest first."""
        self._index: int | None = None
        self._draft = ""
        self._key_time: float | None = None  # the time of the key being handled, if any

    async def _on_key(self, event: events.Key) -> None:
        self._key_time = event.time
        try:
            await self._act_on_key(event)
        finally:
            self._key_time = None

    async def _act_on_key(self, event: events.Key) -> None:
        # Backspace, the arrows, Ctrl+W... act here, in order with the characters typed
        # around them (see desk.widgets.key_order).
        if await run_own_binding(self, event):
            event.stop()
            event.prevent_default()
        elif (text := typed_text(event)) is not None:  # a no-break space, a joiner...
            event.stop()
            event.prevent_default()
            self.insert_text_at_cursor(text)
        else:
            await super()._on_key(event)

    async def action_submit(self) -> None:
        """Enter: post :class:`Entered` with the line and the Enter key's own time."""
        self.post_message(self.Entered(self.value, self._key_time))

    def remember(self, line: str) -> None:
        """Add a sent line to the history (not twice in a row) and reset the walk."""
        if line and (not self.history or self.history[-1] != line):
            self.history.append(line)
            del self.history[:-HISTORY_LIMIT]
        self._index = None
        self._draft = ""

    def action_history(self, step: int) -> None:
        """Up (-1) shows the previous line; Down (+1) the next, then what was being typed."""
        if not self.history:
            return
        if self._index is None:
            if step > 0:
                return
            self._draft = self.value
            index = len(self.history) - 1
        else:
            index = self._index + step
        if index < 0:
            index = 0
        if index >= len(self.history):
            self._index = None
            self.value = self._draft
        else:
            self._index = index
            self.value = self.history[index]
        self.cursor_position = len(self.value)
