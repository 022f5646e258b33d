"""The desk without a model server: saved sessions stay readable, the problem is one line,
``/server URL`` and ``/model NAME`` fix it at run time, and a model the server does not list is
refused with the names it does list; a server that dies mid-session is unreachable as at start.
Real demo model servers; a closed port for "unreachable".
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
from textual.pilot import Pilot

from agent.provider.client import ProviderConfig
from agent.store import SqliteStore
from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.config import ConnectionInfo
from desk.controllers.ports import REFUSED_TOAST_S
from desk.startup import Startup
from desk.widgets import PromptInput
from desk.widgets.saved_reply import SavedReply
from tests.desk.kit import submit, submit_and_get_reply, wait_until
from tests.support import EventLog, running_demo
from tui_gateway.gateway import Gateway, GatewayConfig

pytestmark = pytest.mark.anyio


def closed_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}/v1"


def notes(app: DeskApp) -> list[str]:
    return [str(n.render()) for n in app.transcript.query_children(".note")]


def toasts(app: DeskApp) -> list[str]:
    return [str(n.message) for n in app._notifications]


async def wait_note(pilot: Pilot[object], app: DeskApp, text: str) -> str:
    """The first transcript line that contains ``text`` (waits for it)."""

    def found() -> str | None:
        return next((n for n in notes(app) if text in n), None)

    await wait_until(pilot, found, timeout_s=20.0, what=f"a line with {text!r}")
    line = found()
    assert line is not None
    return line


def desk_on(gateway: Gateway, url: str, model: str = "demo", **kw: object) -> DeskApp:
    shown = ConnectionInfo(model, url, source="--base-url")
    return DeskApp(gateway, shown, handle_signals=False, **kw)  # type: ignore[arg-type]


@pytest.fixture
def saved_db(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A session database with one session of two finished turns."""
    db = tmp_path / "desk.db"
    with running_demo(0) as server:
        provider = ProviderConfig(base_url=server.base_url, model="demo")
        gateway = Gateway(GatewayConfig(provider=provider), store=SqliteStore(db))
        log = EventLog()
        gateway.subscribe(log)
        session = gateway.session_create("Notes from yesterday")
        for text in ("reply with exactly: first answer", "reply with exactly: second answer"):
            log.complete(gateway.prompt_submit(session, text).turn_id)
        assert gateway.shutdown(timeout_s=5.0).threads_left == []
    yield db, session


async def test_saved_sessions_can_be_listed_resumed_and_exported_without_a_server(
    saved_db: tuple[Path, str], tmp_path: Path
) -> None:
    db, session = saved_db
    url = closed_url()
    gateway = Gateway(
        GatewayConfig(provider=ProviderConfig(base_url=url, model="demo")), store=SqliteStore(db)
    )
    app = desk_on(gateway, url, startup=Startup(resume=True))
    app.controllers.export.wall_clock = lambda: datetime(2026, 1, 2, 3, 4)
    target = tmp_path / "yesterday.md"
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            line = await wait_note(pilot, app, "cannot reach the model server")
            assert line.startswith(f"✖ cannot reach the model server at {url}: connection refused")
            assert "Ctrl+B" in line and "/server URL" in line and "\n" not in line
            assert app.status_bar.server_problem == "⚠ server unreachable · retrying"
            assert app.session_id == session
            replies = [r.text for r in app.transcript.query_children(SavedReply)]
            assert replies == ["first answer", "second answer"]

            await pilot.press("ctrl+b")
            await wait_until(pilot, lambda: app.widgets.sidebar.items, what="the sessions list")
            assert [i.info.title for i in app.widgets.sidebar.items] == ["Notes from yesterday"]
            await pilot.press("ctrl+b")

            await submit(pilot, f"/export {target}")
            await wait_note(pilot, app, "exported")

            await submit(pilot, "reply with exactly: not now")  # refused, and kept
            await wait_until(pilot, lambda: toasts(app), what="the refusal")
            assert any("cannot reach the model server" in t for t in toasts(app))
            (refusal,) = [n for n in app._notifications if n.title == "Prompt not sent"]
            assert refusal.timeout == REFUSED_TOAST_S  # stays long enough to be read
            assert app.query_one(PromptInput).text == "reply with exactly: not now"
    finally:
        assert gateway.shutdown(timeout_s=5.0).threads_left == []
    text = target.read_text()
    assert text.startswith("# Notes from yesterday\n") and "second answer" in text


async def test_server_url_moves_the_desk_to_another_server_at_run_time() -> None:
    url = closed_url()
    gateway = Gateway(GatewayConfig(provider=ProviderConfig(base_url=url, model="")))
    app = desk_on(gateway, url, model="")
    try:
        with running_demo(0) as server:
            async with app.run_test(size=(120, 40)) as pilot:
                await wait_note(pilot, app, "cannot reach the model server")
                await submit(pilot, f"/server {server.base_url}")
                answer = await wait_note(pilot, app, f"/server {server.base_url} — ")
                assert answer == (
                    f"/server {server.base_url} — the model server at {server.base_url} "
                    "answers and lists demo; using demo"
                )
                await wait_note(pilot, app, "answers: prompts go")
                bar = app.status_bar
                assert bar.server_problem == ""
                assert bar.server_side_text().startswith(f"demo · 127.0.0.1:{server.port} · ")
                reply = await submit_and_get_reply(app, pilot, "reply with exactly: moved")
                await wait_until(pilot, lambda: reply.outcome is not None, what="the reply")
                assert reply.text == "moved"
    finally:
        assert gateway.shutdown(timeout_s=5.0).threads_left == []


async def test_a_model_the_server_does_not_list_is_refused_with_the_names_it_lists() -> None:
    with running_demo(0) as server:
        url = server.base_url
        gateway = Gateway(GatewayConfig(provider=ProviderConfig(base_url=url, model="gpt-9")))
        app = desk_on(gateway, url, model="gpt-9")
        try:
            async with app.run_test(size=(120, 40)) as pilot:
                line = await wait_note(pilot, app, "does not list model")
                assert line == (
                    f"✖ the model server at {url} does not list model 'gpt-9'; it lists demo"
                    " — /model NAME picks one"
                )
                assert app.status_bar.server_problem == "⚠ model not on the server · /model"
                await submit(pilot, "reply with exactly: hi")
                await wait_until(pilot, lambda: toasts(app), what="the refusal")
                assert any("does not list model 'gpt-9'; it lists demo" in t for t in toasts(app))
                assert app.query_one(PromptInput).text == "reply with exactly: hi"

                await submit(pilot, "/model nope")
                refused = await wait_note(pilot, app, "/model nope — ")
                assert refused == (
                    f"/model nope — ✖ the model server at {url} does not list model 'nope'; "
                    "it lists demo"
                )
                await submit(pilot, "/model demo")
                await wait_note(pilot, app, "/model demo — this session now uses model demo")
                await wait_until(pilot, lambda: not app.status_bar.server_problem, what="cleared")
                reply = await submit_and_get_reply(app, pilot, "reply with exactly: listed")
                await wait_until(pilot, lambda: reply.outcome is not None, what="the reply")
                assert reply.text == "listed" and server.records.list()[-1].model == "demo"
        finally:
            assert gateway.shutdown(timeout_s=5.0).threads_left == []


def test_the_start_screen_without_a_server(snap_compare: object) -> None:
    url = "http://127.0.0.1:9/v1"  # the discard port: nothing listens on loopback
    gateway = Gateway(GatewayConfig(provider=ProviderConfig(base_url=url, model="")))
    app = desk_on(gateway, url, model="", clock=lambda: 0.0)
    app.animation_level = "none"

    async def run_before(pilot: Pilot[object]) -> None:
        app.query_one(PromptInput).cursor_blink = False
        await wait_note(pilot, app, "cannot reach the model server")
        await pilot.pause()

    try:
        assert snap_compare(app, terminal_size=(100, 30), run_before=run_before)  # type: ignore[operator]
    finally:
        gateway.shutdown(timeout_s=5.0)


@pytest.mark.parametrize("tokens_per_second", [20.0])
async def test_a_server_that_dies_mid_session_is_unreachable_as_at_start(
    desk_app: DeskApp, demo_server: DemoModelServer
) -> None:
    app, port = desk_app, demo_server.port
    async with app.run_test(size=(120, 40)) as pilot:
        reply = await submit_and_get_reply(app, pilot, "Tell me about stopping streams")
        await wait_until(pilot, lambda: reply.text, what="streaming")
        demo_server.stop()  # killed mid-stream
        await wait_until(pilot, lambda: reply.outcome is not None, what="the turn's end")
        assert reply.outcome == "failed"
        line = await wait_note(pilot, app, "cannot reach the model server")
        assert line.startswith(f"✖ cannot reach the model server at {demo_server.base_url}: ")
        bar = app.status_bar
        await wait_until(pilot, lambda: bar.server_problem, what="the status bar's warning")
        assert bar.server_problem == "⚠ server unreachable · retrying"

        await submit(pilot, "reply with exactly: not now")  # refused, and kept
        await wait_until(pilot, lambda: toasts(app), what="the refusal")
        assert any("cannot reach the model server" in t for t in toasts(app))
        assert app.query_one(PromptInput).text == "reply with exactly: not now"
        assert len(app.transcript.reply_turn_ids) == 1  # no failed turn for it

        with running_demo(0, port=port):
            await wait_note(pilot, app, "answers: prompts go")
            assert bar.server_problem == ""
            again = await submit_and_get_reply(app, pilot, "reply with exactly: back")
            await wait_until(pilot, lambda: again.outcome is not None, what="the reply")
            assert again.text == "back"


async def test_a_prompt_that_found_the_server_gone_comes_back_to_the_box(
    desk_app: DeskApp, demo_server: DemoModelServer
) -> None:
    # The server went away while desk was idle: the next prompt's request cannot connect. It
    # never reached the model (and stays out of its history), so its text comes back.
    app = desk_app
    async with app.run_test(size=(120, 40)) as pilot:
        first = await submit_and_get_reply(app, pilot, "reply with exactly: first")
        await wait_until(pilot, lambda: first.outcome is not None, what="the first reply")
        demo_server.stop()
        lost = await submit_and_get_reply(app, pilot, "reply with exactly: lost")
        await wait_until(pilot, lambda: lost.outcome is not None, what="the failed turn")
        assert lost.outcome == "failed" and not lost.text
        box = app.query_one(PromptInput)
        await wait_until(pilot, lambda: box.text, what="the prompt back in the box")
        assert box.text == "reply with exactly: lost"
