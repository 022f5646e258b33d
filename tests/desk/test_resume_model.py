"""``desk --model NAME --resume``: the resumed session goes on with the model the command line
names (without ``--model`` it keeps its own, as saved)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.provider.client import ProviderConfig
from agent.store import SqliteStore
from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.startup import Startup
from tests.desk.kit import connection, submit_and_get_reply, wait_until
from tui_gateway.gateway import Gateway, GatewayConfig

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("named", [None, "demo"])
async def test_a_model_named_on_the_command_line_is_the_resumed_sessions(
    named: str | None, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    store = SqliteStore(tmp_path / "desk.db")
    session = store.sessions.create_session(title="old", model="served-elsewhere").id
    provider = ProviderConfig(base_url=demo_server.base_url, model="demo")
    gateway = Gateway(GatewayConfig(provider=provider, cwd=tmp_path), store=store)
    startup = Startup(resume=True, resume_id=session, model=named)
    app = DeskApp(gateway, connection(demo_server.base_url), handle_signals=False, startup=startup)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_until(pilot, lambda: app.controllers.sessions.view, what="the session")
            await wait_until(pilot, lambda: app.status_bar.model, what="its model shown")
            if named is None:  # its own model, as saved
                assert app.status_bar.model == "served-elsewhere"
                assert gateway.provider_for(session).model == "served-elsewhere"
                return
            assert app.status_bar.model == "demo"
            reply = await submit_and_get_reply(app, pilot, "reply with exactly: moved")
            await wait_until(pilot, lambda: reply.outcome is not None, what="the reply")
            assert reply.text == "moved" and demo_server.records.list()[-1].model == "demo"
    finally:
        assert gateway.shutdown(timeout_s=5.0).threads_left == []
        store.close()
    turns = SqliteStore(tmp_path / "desk.db").sessions.get_session(session)
    assert turns is not None and turns.model == "demo"  # saved with the session
