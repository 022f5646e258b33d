"""The context gauge counts one thing in every case: what the session's next request carries
before its prompt (system prompt, transcript, tool definitions as sent), by the count the
automatic compression compares with its threshold. On a fresh start, after ``/new``, after a
stopped turn and after a resume it agrees with the gateway, and with the server's own count."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.context.shape import well_formed
from agent.provider.client import ProviderConfig
from agent.store import SqliteStore
from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.startup import Startup
from desk.widgets.status_bar import StatusBar
from tests.desk.kit import connection, submit, submit_and_get_reply, wait_until
from tests.support import running_demo
from tui_gateway.gateway import Gateway, GatewayConfig

pytestmark = pytest.mark.anyio

N_CTX = 4096


@pytest.fixture
def small_server() -> Iterator[DemoModelServer]:
    with running_demo(20.0, n_ctx=N_CTX) as server:
        yield server


def next_request(gateway: Gateway, session_id: str) -> int:
    """The gateway's count of the session's next request before its prompt: the figure
    automatic compression compares with its threshold (the prompt is added to it)."""
    budget = gateway.context_budget(session_id)
    return budget.count(well_formed(gateway.history(session_id)), gateway._offered())


def shown(status: StatusBar) -> int:
    assert status.context_used is not None, "the gauge shows no count"
    return status.context_used


async def test_the_gauge_counts_the_same_thing_fresh_stopped_new_and_resumed(
    small_server: DemoModelServer, tmp_path: Path
) -> None:
    provider = ProviderConfig(base_url=small_server.base_url, model="demo")
    db = tmp_path / "desk.db"
    gateway = Gateway(GatewayConfig(provider=provider), store=SqliteStore(db))
    app = DeskApp(gateway, connection(small_server.base_url), handle_signals=False)
    async with app.run_test(size=(120, 30)) as pilot:
        status = app.status_bar
        await wait_until(pilot, lambda: status.window_note != "", what="the gateway's count")
        session = app.session_id
        fresh = shown(status)
        assert fresh == next_request(gateway, session)

        # The first turn, stopped: nothing was removed, so the gauge cannot fall.
        reply = await submit_and_get_reply(app, pilot, "Tell me about stopping streams")
        await wait_until(pilot, lambda: len(reply.text) > 8, what="some reply")
        await pilot.press("escape")
        await wait_until(pilot, lambda: reply.outcome == "interrupted", what="the stop")
        grown = len(gateway.history(session))
        await wait_until(
            pilot, lambda: shown(status) == next_request(gateway, session), what="the count"
        )
        assert shown(status) > fresh and len(gateway.history(session)) == grown

        # A whole turn: the server's count of its request is what the fresh gauge said, plus
        # the stopped turn and this prompt (a few tokens each).
        done = await submit_and_get_reply(app, pilot, "reply with exactly: ok")
        await wait_until(pilot, lambda: done.outcome is not None, what="the reply")
        chats = [r for r in small_server.records.list() if "chat" in r.path]
        first = min(r.prompt_tokens for r in chats)
        assert 0 < first - fresh < 48  # not 2.5 times the server's count
        await wait_until(
            pilot, lambda: shown(status) == next_request(gateway, session), what="the count"
        )
        before_quit = shown(status)

        # /new: the same system prompt and tools as a fresh start, counted the same way.
        await submit(pilot, "/new")
        await wait_until(pilot, lambda: app.session_id != session, what="the new session")
        await wait_until(pilot, lambda: status.context_used is not None, what="its count")
        assert shown(status) == next_request(gateway, app.session_id)
        assert abs(shown(status) - fresh) <= 8
    assert gateway.shutdown(timeout_s=5.0).threads_left == []

    # Quit and resume: the same count as before the quit (compression decides the same).
    gateway = Gateway(GatewayConfig(provider=provider), store=SqliteStore(db))
    resumed = DeskApp(
        gateway,
        connection(small_server.base_url),
        handle_signals=False,
        startup=Startup(resume=True, resume_id=session),
    )
    async with resumed.run_test(size=(120, 30)) as pilot:
        status = resumed.status_bar
        await wait_until(pilot, lambda: resumed.session_id == session, what="the resume")
        assert status.context_used in (None, next_request(gateway, session))  # never a guess
        await wait_until(pilot, lambda: status.window_note != "", what="the gateway's count")
        assert shown(status) == next_request(gateway, session)
        assert abs(shown(status) - before_quit) <= N_CTX // 100
    assert gateway.shutdown(timeout_s=5.0).threads_left == []
