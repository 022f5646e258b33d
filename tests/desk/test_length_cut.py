"""A reply the server cut at its token limit is shown as cut, not as whole, live and once
the session is resumed."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.provider.client import ProviderConfig
from agent.store import SqliteStore
from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.startup import Startup
from desk.widgets.saved_reply import SavedReply
from tests.desk.kit import connection, submit_and_get_reply, wait_until
from tests.support import EventLog
from tui_gateway.gateway import Gateway, GatewayConfig

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


async def test_the_cut_line_is_shown_again_when_the_session_is_resumed(
    demo_server: DemoModelServer, tmp_path: Path
) -> None:
    db = tmp_path / "desk.db"
    provider = ProviderConfig(base_url=demo_server.base_url, model="demo")
    demo_server.configure(max_tokens=12)
    first = Gateway(GatewayConfig(provider=provider, cwd=tmp_path), store=SqliteStore(db))
    log = EventLog()
    first.subscribe(log)
    try:
        session = first.session_create()
        cut = log.complete(first.prompt_submit(session, "Tell me about stopping streams").turn_id)
        demo_server.configure(max_tokens=400)
        whole = log.complete(first.prompt_submit(session, "reply with exactly: whole").turn_id)
    finally:
        assert first.shutdown(timeout_s=5.0).threads_left == []
    assert cut.length_notice() == "⚠ cut at the reply's token limit (12 tokens)"
    assert whole.length_notice() == ""

    again = Gateway(GatewayConfig(provider=provider, cwd=tmp_path), store=SqliteStore(db))
    startup = Startup(resume=True, resume_id=session)
    app = DeskApp(again, connection(demo_server.base_url), handle_signals=False, startup=startup)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_until(
                pilot, lambda: len(app.transcript.query(SavedReply)) == 2, what="the replies"
            )
            shown = [(r.text, r.note) for r in app.transcript.query(SavedReply)]
            assert shown == [(cut.text, cut.length_notice()), ("whole", "")]
    finally:
        assert again.shutdown(timeout_s=5.0).threads_left == []
