"""The queue above the prompt box survives two changes shown at once (prompts queued in a burst
while the UI thread is busy): a line mounted by the first is updated by the second before it
was composed, and shows what the second said (it crashed desk: ``NoMatches '.place'``)."""

from __future__ import annotations

import asyncio

import pytest
from textual.app import App, ComposeResult
from textual.widgets import Static

from desk.queue_state import SessionQueue
from desk.widgets.queue_list import QueueList
from desk.widgets.queued_item import QueuedItem

pytestmark = pytest.mark.anyio


class _QueueApp(App[None]):
    def compose(self) -> ComposeResult:
        yield QueueList(id="queue")


async def test_two_changes_shown_at_once_keep_the_queue_on_screen() -> None:
    app = _QueueApp()
    async with app.run_test(size=(80, 12)) as pilot:
        queue_list = app.query_one(QueueList)
        first = SessionQueue()
        first.add("t1", "A1")
        second = SessionQueue()
        second.add("t1", "A1")  # the line the first change is still mounting
        second.add("t2", "B1")
        await asyncio.gather(queue_list.show(first), queue_list.show(second))
        await pilot.pause()
        items = queue_list.items
        assert [item.entry.key for item in items] == ["t1", "t2"]
        places = [str(item.query_one(".place", Static).render()) for item in items]
        assert places == ["#1", "#2"]


async def test_a_line_shown_before_it_is_composed_draws_what_it_was_last_told() -> None:
    queue = SessionQueue()
    queue.add("t1", "A1")
    (entry,) = queue.entries
    item = QueuedItem(entry, 0)
    item.show(3, editing=True)  # not mounted yet: nothing to update, nothing raised
    app = _QueueApp()
    async with app.run_test(size=(80, 12)) as pilot:
        await app.query_one(QueueList).mount(item)
        await pilot.pause()
        assert str(item.query_one(".place", Static).render()) == "#3"
        assert item.has_class("-editing")
        assert "Enter saves it here" in str(item.query_one(".editing", Static).render())
