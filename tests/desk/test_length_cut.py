"""A reply the server cut at its token limit is shown as cut, not as whole."""

from __future__ import annotations

import pytest

from demo_model.server import DemoModelServer
from desk.app import DeskApp
from tests.desk.kit import submit_and_get_reply, wait_until
from tui_gateway.gateway import Gateway

pytestmark = pytest.mark.anyio


async def test_a_reply_cut_at_the_token_limit_says_so_under_it(
    desk_app: DeskApp, gateway: Gateway, demo_server: DemoModelServer
) -> None:
    demo_server.configure(max_tokens=12)
    async with desk_app.run_test(size=(120, 40)) as pilot:
        reply = await submit_and_get_reply(desk_app, pilot, "Tell me about stopping streams")
        await wait_until(pilot, lambda: reply.outcome is not None, what="the turn's outcome")
        assert reply.outcome == "completed"
        assert reply.note == "⚠ cut at the reply's token limit (12 tokens)"

        demo_server.configure(max_tokens=400)
        whole = await submit_and_get_reply(desk_app, pilot, "reply with exactly: whole")
        await wait_until(pilot, lambda: whole.outcome is not None, what="the second outcome")
        assert (whole.text, whole.note) == ("whole", "")
