"""The queue, above the prompt box: every prompt waiting to run, in order, each removable and
editable, and the prompts not sent when the desk last closed, offered again.

It shows a :class:`desk.queue_state.SessionQueue` (:meth:`QueueList.show`) and hides itself
when that is empty. It never takes the focus: clicks press its buttons and the prompt box keeps
the keyboard (Up on an empty prompt box edits the last queued prompt).

It is at most a quarter of the screen tall (:func:`queue_rows`: 8 rows on a usual terminal, 3 on
a 15-row one), so the transcript keeps most of a small screen; beyond that it scrolls, its first
line says how many lines are below (``queued · +4 more below · …``), and the line the prompt box
edits is scrolled into view.
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

MAX_ROWS = 8
"""The queue's most rows, however tall the screen."""

MIN_ROWS = 2
"""Its most rows on a tiny screen (its heading and the next prompt)."""

SCREEN_SHARE = 4
"""The queue takes at most one row in this many of the screen's."""


def queue_rows(screen_rows: int) -> int:
    """The queue's most rows on a screen ``screen_rows`` tall: a quarter of them, from
    :data:`MIN_ROWS` to :data:`MAX_ROWS`."""
    return max(MIN_ROWS, min(MAX_ROWS, screen_rows // SCREEN_SHARE))


def with_more(heading: str, hidden: int) -> str:
    """``heading`` saying that ``hidden`` lines are below the queue's last row (after its first
    phrase, so a narrow line still shows it); ``heading`` itself when none is."""
    if hidden <= 0:
        return heading
    first, sep, rest = heading.partition(" · ")
    return f"{first} · +{hidden} more below{sep}{rest}"


class QueueList(VerticalScroll):
    """The queue's lines (at most :func:`queue_rows` tall; it scrolls beyond)."""

    DEFAULT_CSS = css_beside(__file__)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.can_focus = False
        self._items: dict[str, QueuedItem] = {}
        self._heading = Static(HEADING, classes="heading", markup=False)
        self._held_heading = Static(HELD_HEADING, classes="held-heading", markup=False)
        self._rows = MAX_ROWS

    def compose(self) -> ComposeResult:
        yield self._heading
        yield self._held_heading

    def on_mount(self) -> None:
        self.fit_screen(self.screen.size.height)

    def fit_screen(self, screen_rows: int) -> None:
        """The screen is ``screen_rows`` tall (mounted, or resized): take at most
        :func:`queue_rows` of them."""
        self._rows = queue_rows(screen_rows)
        self.styles.max_height = self._rows
        self._say_hidden()

    def _say_hidden(self) -> None:
        """The first heading shown says how many lines are below the queue's last row."""
        lines = [child for child in self.children if child.display]
        hidden = len(lines) - self._rows
        queued, held = self._heading, self._held_heading
        queued.update(with_more(HEADING, hidden if queued.display else 0))
        held.update(with_more(HELD_HEADING, hidden if held.display and not queued.display else 0))

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
        self._say_hidden()
        edited = self._items.get(editing) if editing is not None else None
        if edited is not None:  # below the last row, maybe: where the person sees it
            self.call_after_refresh(self.scroll_to_widget, edited, animate=False)
