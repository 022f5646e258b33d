"""The view follows the newest content unless the person scrolled up; sending a prompt, End
and Ctrl+End go back to the end and follow again; "new output below" shows meanwhile."""

from __future__ import annotations

import pytest

from desk.app import DeskApp
from desk.widgets import PromptInput
from desk.widgets.follow_marker import NEW_BELOW
from tests.desk.kit import submit_and_get_reply, wait_until

pytestmark = pytest.mark.anyio

SIZE = (80, 18)
"""Small enough that one long reply overflows the transcript."""


def in_view(app: DeskApp, widget: object) -> bool:
    """True when some of ``widget`` is inside the transcript's visible region."""
    region = widget.region  # type: ignore[attr-defined]
    return region.height > 0 and bool(region.intersection(app.transcript.region))


def overflowing(app: DeskApp) -> bool:
    transcript = app.transcript
    return transcript.max_scroll_y > 3


@pytest.mark.parametrize("tokens_per_second", [60.0])
async def test_a_prompt_sent_after_scrolling_up_comes_into_view_with_its_reply(
    desk_app: DeskApp,
) -> None:
    async with desk_app.run_test(size=SIZE) as pilot:
        reply = await submit_and_get_reply(desk_app, pilot, "Tell me about stopping streams")
        await wait_until(pilot, lambda: overflowing(desk_app), what="a reply taller than the view")
        assert desk_app.transcript.following
        await pilot.press("pageup")
        assert not desk_app.transcript.following
        marker = desk_app.view.follow_marker
        await wait_until(pilot, lambda: marker.shown, what="the marker")
        await wait_until(pilot, lambda: NEW_BELOW in str(marker.render()), what="new output")
        await pilot.press("escape")
        await wait_until(pilot, lambda: reply.outcome is not None, what="the stop")

        second = await submit_and_get_reply(desk_app, pilot, "reply with exactly: the second")
        await wait_until(pilot, lambda: second.outcome is not None, what="the second reply")
        await pilot.pause()
        assert desk_app.transcript.following and not marker.shown
        prompt = desk_app.transcript.prompt(desk_app.transcript.reply_turn_ids[-1])
        assert prompt is not None and in_view(desk_app, prompt) and in_view(desk_app, second)


@pytest.mark.parametrize("key", ["end", "ctrl+end"])
@pytest.mark.parametrize("tokens_per_second", [60.0])
async def test_end_goes_back_to_the_end_and_follows(desk_app: DeskApp, key: str) -> None:
    async with desk_app.run_test(size=SIZE) as pilot:
        reply = await submit_and_get_reply(desk_app, pilot, "Tell me about stopping streams")
        await wait_until(pilot, lambda: overflowing(desk_app), what="a reply taller than the view")
        await pilot.press("pageup", "pageup")
        transcript = desk_app.transcript
        assert not transcript.following
        box = desk_app.query_one(PromptInput)
        box.text = "draft"
        box.move_cursor((0, 0))
        await pilot.press(key)
        await pilot.pause()
        assert transcript.following and not desk_app.view.follow_marker.shown
        assert transcript.scroll_y >= transcript.max_scroll_y - 1
        if key == "end":
            assert box.cursor_location == (0, 5)  # End still moves the prompt box's cursor
        await wait_until(pilot, lambda: reply.text.count(" ") > 60, what="more of the reply")
        assert transcript.following and transcript.scroll_y >= transcript.max_scroll_y - 1
        await pilot.press("escape")
