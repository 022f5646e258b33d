"""A desk started and quit without a prompt leaves no empty "(new session)" in the sidebar of
the next start; a session with a turn stays listed; another desk's session is never touched."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.provider.client import ProviderConfig
from agent.store import SqliteStore
from demo_model.server import DemoModelServer
from desk.app import DeskApp
from tests.desk.kit import connection, submit_and_get_reply, wait_until
from tui_gateway.gateway import Gateway, GatewayConfig

pytestmark = pytest.mark.anyio


@pytest.fixture
def tokens_per_second() -> float:
    """Whole replies, quickly: no test here stops a turn."""
    return 400.0


def gateway_on(db: Path, server: DemoModelServer) -> Gateway:
    provider = ProviderConfig(base_url=server.base_url, model="demo")
    return Gateway(GatewayConfig(provider=provider), store=SqliteStore(db))


async def one_desk(db: Path, server: DemoModelServer, prompt: str | None = None) -> list[str]:
    """Start a desk on ``db``, list the sidebar, send ``prompt`` if any, quit.

    Returns:
        the ids the sidebar listed at the start, its own session's first.
    """
    gateway = gateway_on(db, server)
    app = DeskApp(gateway, connection(server.base_url), handle_signals=False)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_until(pilot, lambda: app.session_id, what="the session")
            await pilot.press("ctrl+b")
            sidebar = app.widgets.sidebar
            await wait_until(pilot, lambda: sidebar.items, what="the list")
            listed = [i.info.session_id for i in sidebar.items]
            assert listed[0] == app.session_id  # the desk's own, new session
            await pilot.press("ctrl+b")
            if prompt is not None:
                reply = await submit_and_get_reply(app, pilot, prompt)
                await wait_until(pilot, lambda: reply.outcome is not None, what="the turn")
    finally:
        assert gateway.shutdown(timeout_s=5.0).threads_left == []
    return listed


async def test_a_desk_quit_without_a_prompt_leaves_no_empty_session(
    demo_server: DemoModelServer, tmp_path: Path
) -> None:
    db = tmp_path / "desk.db"
    [first] = await one_desk(db, demo_server)
    second = await one_desk(db, demo_server, prompt="hello")
    assert first not in second and len(second) == 1  # only its own: nothing empty listed
    third = await one_desk(db, demo_server)
    assert third[1:] == [second[0]]  # the session with a turn is still listed
    with SqliteStore(db) as store:
        assert [row.id for row in store.sessions.list_sessions()] == [second[0]]
        [kept] = store.sessions.list_sessions()
        assert kept.title


async def test_another_desks_unused_session_is_never_touched(
    demo_server: DemoModelServer, tmp_path: Path
) -> None:
    db = tmp_path / "desk.db"
    other = gateway_on(db, demo_server)  # another desk, open all along, no prompt yet
    try:
        theirs = other.session_create()
        listed = await one_desk(db, demo_server)
        assert theirs in listed
        with SqliteStore(db) as store:
            assert store.sessions.get_session(theirs) is not None
            assert store.sessions.get_session(listed[0]) is None  # ours went with our quit
        other.prompt_submit(theirs, "hello")
    finally:
        assert other.shutdown(timeout_s=5.0).threads_left == []
    with SqliteStore(db) as store:
        assert store.sessions.get_session(theirs) is not None
