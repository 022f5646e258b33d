"""The queue, above the prompt box: every prompt waiting to run, in order, each removable and
editable, and the prompts not sent when the desk last closed, offered again.

It shows a :class:`desk.queue_state.SessionQueue` (:meth:`QueueList.show`) and hides itself
when that is empty. It never takes the focus: clicks press its buttons and the prompt box keeps
the keyboard (Up on an empty prompt box edits the last queued prompt).
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from desk.queue_state import SessionQueue
from desk.widgets._css import css_beside
from desk.widgets.queued_item import QueuedItem

HEADING = "queued · runs in this order · ✎ or Up on an empty box edits · ✕ removes"
"""The line above the queue."""

HELD_HEADING = "not sent when desk last closed · ↻ queues it again · ✕ forgets it"
"""The line above the prompts offered again."""


class QueueList(VerticalScroll):
    """The queue's lines (at most a few rows tall; it scrolls beyond)."""

    DEFAULT_CSS = css_beside(__file__)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.can_focus = False
        self._items: dict[str, QueuedItem] = {}
        self._heading = Static(HEADING, classes="heading", markup=False)
        self._held_heading = Static(HELD_HEADING, classes="held-heading", markup=False)

    def compose(self) -> ComposeResult:
        yield self._heading
        yield self._held_heading

    @property
    def items(self) -> list[QueuedItem]:
        """The lines shown, top to bottom."""
        return [child for child in self.children if isinstance(child, QueuedItem)]

    async def show(self, queue: SessionQueue, editing: str | None = None) -> None:
        """Show ``queue`` (``editing``: the key of the line the prompt box edits, if any)."""
        if not self._heading.is_attached:
            return  # not composed yet: the next change shows it
        entries = queue.entries
        keys = {entry.key for entry in entries}
        gone = [item for key, item in self._items.items() if key not in keys]
        for item in gone:
            del self._items[item.entry.key]
        if gone:
            await self.remove_children(gone)
        queued_heading, held_heading = self._heading, self._held_heading
        before: Static | QueuedItem = queued_heading
        position = 0
        held_seen = False
        for entry in entries:
            if entry.kind == "held" and not held_seen:  # one heading above the first of them
                held_seen = True
                if self.children.index(held_heading) != self.children.index(before) + 1:
                    self.move_child(held_heading, after=before)
                before = held_heading
            found = self._items.get(entry.key)
            if found is None:
                item = self._items[entry.key] = QueuedItem(entry, 0)
                await self.mount(item, after=before)
            else:
                item = found
                if self.children.index(item) != self.children.index(before) + 1:
                    self.move_child(item, after=before)
            position = position + 1 if entry.kind != "held" else 0
            item.show(position, editing=entry.key == editing)
            before = item
        queued = len(queue) > 0
        queued_heading.display = queued
        held_heading.display = any(entry.kind == "held" for entry in entries)
        self.set_class(bool(entries), "-shown")
