"""On a small terminal the queue above the prompt box keeps to a quarter of the screen: six
queued prompts at 40x15 leave the transcript most of the rows; the queue scrolls, its heading
says how many lines are below, and the prompt the box edits (Up: the last one) is scrolled
into view. A taller window gives the queue its usual rows back. Over a real gateway and the
demo model."""

from __future__ import annotations

import pytest

from desk.app import DeskApp
from desk.widgets import PromptInput
from desk.widgets.queue_list import MAX_ROWS, queue_rows, with_more
from desk.widgets.session_view import SessionView
from tests.desk.kit import submit, submit_and_get_reply, wait_until

pytestmark = pytest.mark.anyio

QUEUED = 6


def heading(app: DeskApp) -> str:
    return str(app.widgets.queue.query_one(".heading").render())


def test_the_queue_takes_a_quarter_of_the_screen_from_two_to_eight_rows() -> None:
    assert [queue_rows(n) for n in (1, 8, 15, 24, 32, 40, 100)] == [2, 2, 3, 6, 8, 8, 8]
    assert (
        with_more("queued · runs in this order", 4) == "queued · +4 more below · runs in this order"
    )
    assert with_more("queued · runs in this order", 0) == "queued · runs in this order"


@pytest.mark.parametrize("tokens_per_second", [8.0])  # the first turn outlasts the test
async def test_six_queued_prompts_leave_a_40x15_screen_to_the_transcript(
    desk_app: DeskApp,
) -> None:
    async with desk_app.run_test(size=(40, 15)) as pilot:
        first = await submit_and_get_reply(desk_app, pilot, "Tell me about stopping streams")
        await wait_until(pilot, lambda: first.text, what="streaming")
        for n in range(QUEUED):
            await submit(pilot, f"reply with exactly: {n}")
        queue = desk_app.widgets.queue
        await wait_until(pilot, lambda: len(queue.items) == QUEUED, what="six queued lines")
        await pilot.pause()

        view = desk_app.screen.query_one(SessionView)
        assert queue.region.height == 3  # its heading and the next two prompts
        assert view.region.height >= 8  # most of the 15 rows stay the transcript's
        assert heading(desk_app).startswith("queued · +4 more below · ")
        assert queue.items[0].region.height == 1  # the next prompt is on screen
        assert queue.items[-1].region.y >= queue.region.bottom  # the last is scrolled below

        box = desk_app.query_one(PromptInput)
        box.text = ""
        await pilot.press("up")  # on an empty box: edit the last queued prompt
        last = queue.items[-1]
        await wait_until(pilot, lambda: box.editing == last.entry.key, what="the edit")
        await wait_until(
            pilot,
            lambda: queue.region.y <= last.region.y < queue.region.bottom,
            what="the edited prompt scrolled into view",
        )
        box.text = ""  # emptied, the box still edits it: Enter on it gives the edit up
        await pilot.press("enter")
        await wait_until(pilot, lambda: box.editing is None, what="the edit given up")

        await pilot.resize_terminal(120, 40)
        await wait_until(
            pilot, lambda: queue.region.height == 1 + QUEUED, what="the queue whole again"
        )
        assert queue.styles.max_height is not None
        assert queue.styles.max_height.value == MAX_ROWS
        assert heading(desk_app).startswith("queued · runs in this order")
