"""Queued prompts: numbered in queue order, removable with their ✕ or Delete."""

from __future__ import annotations

import pytest

from desk.app import DeskApp
from desk.widgets import UserPrompt
from tests.desk.desk_testkit import click_until, submit, submit_and_get_reply, wait_until
from tui_gateway.gateway import Gateway

pytestmark = pytest.mark.anyio

LONG_PROMPT = "Tell me about stopping streams"


@pytest.mark.parametrize("tokens_per_second", [8.0])  # the first turn outlasts the test
async def test_a_queued_prompt_is_numbered_and_removed_with_its_x(
    desk_app: DeskApp, gateway: Gateway
) -> None:
    async with desk_app.run_test(size=(120, 40)) as pilot:
        first = await submit_and_get_reply(desk_app, pilot, LONG_PROMPT)
        await wait_until(pilot, lambda: first.text, what="streaming")
        await submit(pilot, "reply with exactly: one")
        await submit(pilot, "reply with exactly: two")
        queued = desk_app.controllers.queue.queued_prompts(desk_app.view)
        assert [p.text for p in queued] == ["reply with exactly: one", "reply with exactly: two"]
        assert [p.position for p in queued] == [1, 2]
        assert "queued #1" in str(queued[0].query_one(".prompt-status").render())
        assert desk_app.status_bar.queued == 2

        one, two = queued
        # The card moves while the first reply streams above it: click until it is gone.
        await click_until(
            pilot, one.query_one(".remove"), lambda: not one.is_attached, what="the card to go"
        )
        assert [p.text for p in desk_app.controllers.queue.queued_prompts(desk_app.view)] == [
            "reply with exactly: two"
        ]
        assert two.position == 1
        assert desk_app.status_bar.queued == 1

        two.query_one(".remove").focus()
        await pilot.press("delete")
        await wait_until(
            pilot, lambda: not two.is_attached, timeout_s=30.0, what="the second card to go"
        )
        assert (
            desk_app.controllers.queue.queued_prompts(desk_app.view) == []
            and desk_app.status_bar.queued == 0
        )

        await pilot.press("escape")
        await wait_until(pilot, lambda: first.outcome is not None, what="the stop")
        await wait_until(pilot, lambda: gateway.running_turns == 0, what="nothing running")
        assert [p.status for p in desk_app.transcript.query(UserPrompt)] == ["sent"]
