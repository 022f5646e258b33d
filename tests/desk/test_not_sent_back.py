"""A prompt refused as not sent (too large for the context window) comes back to be shortened:
into the prompt box when the box is empty, or, when the person has typed something since, the
box is left alone and the refusal line says that Up recalls it."""

from __future__ import annotations

import pytest

from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.widgets import AssistantReply, PromptInput
from tests.context.kit import prose, strict_2k
from tests.desk.kit import submit, submit_and_get_reply, wait_until

pytestmark = pytest.mark.anyio

TOO_LARGE = prose(20_000)
"""About 4,600 tokens: larger than the whole 2,048-token window."""


async def test_a_refused_prompt_comes_back_into_the_empty_box(
    desk_app: DeskApp, demo_server: DemoModelServer
) -> None:
    strict_2k(demo_server)
    async with desk_app.run_test(size=(120, 40)) as pilot:
        reply = await submit_and_get_reply(desk_app, pilot, TOO_LARGE)
        await wait_until(pilot, lambda: reply.outcome is not None, what="the refusal")
        assert reply.outcome == "failed" and reply.note.startswith("✖ not sent: ")
        assert "Up recalls it" not in reply.note
        box = desk_app.query_one(PromptInput)
        assert box.text == TOO_LARGE  # back, to be shortened and sent
        assert box.cursor_location == box.document.end
        assert demo_server.records.list() == []  # nothing went to the model


async def test_a_refused_prompt_leaves_a_typed_draft_alone_and_up_recalls_it(
    desk_app: DeskApp, demo_server: DemoModelServer
) -> None:
    strict_2k(demo_server)
    # the first turn stalls until it is stopped: the large prompt waits behind it
    demo_server.configure(fault="stall", fault_after_tokens=1, fault_times=1)
    async with desk_app.run_test(size=(120, 40)) as pilot:
        first = await submit_and_get_reply(desk_app, pilot, "reply with exactly: waiting")
        await submit(pilot, TOO_LARGE)
        await wait_until(pilot, lambda: len(desk_app.view.queue) == 1, what="the queued prompt")
        box = desk_app.query_one(PromptInput)
        box.text = "a draft"  # typed while the large prompt waited
        await pilot.press("escape")  # the first turn stops: the large one runs, and is refused
        await wait_until(pilot, lambda: first.outcome is not None, what="the first turn's end")

        def refused() -> AssistantReply | None:
            replies = [r for r in desk_app.transcript.query(AssistantReply) if r is not first]
            return replies[0] if replies and replies[0].outcome is not None else None

        await wait_until(pilot, refused, what="the refusal")
        reply = refused()
        assert reply is not None and reply.outcome == "failed"
        assert reply.note.startswith("✖ not sent: ") and reply.note.endswith(" · Up recalls it")
        assert box.text == "a draft"  # left alone
        box.move_cursor((0, 0))
        await pilot.press("up")
        assert box.text == TOO_LARGE
        await pilot.press("down")
        assert box.text == "a draft"
