"""Resumed stop notes and errors, their export, the context estimate, /new TITLE, and unknown
slash commands."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from agent.provider.client import ProviderConfig
from agent.store import SqliteStore
from contract.results import ResumedSession, TranscriptEntry
from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.config import ConnectionInfo
from desk.screens.confirm_delete import ConfirmDelete
from desk.slash import unknown_command
from desk.startup import Startup
from desk.widgets import AssistantReply, UserPrompt
from desk.widgets.console_panel import ConsolePanel
from desk.widgets.saved_reply import SavedReply
from tests.desk.kit import connection, submit, submit_and_get_reply, wait_until
from tui_gateway.gateway import Gateway, GatewayConfig

pytestmark = pytest.mark.anyio

SAVED = [
    TranscriptEntry("user", "first question"),
    TranscriptEntry("assistant", "Half an ans", partial=True, note="stopped by you"),
    TranscriptEntry("user", "second question"),
    TranscriptEntry(
        "assistant",
        "Another half",
        partial=True,
        note="stopped by the system: desk is shutting down",
    ),
    TranscriptEntry("user", "third question"),
    TranscriptEntry("assistant", "Cut", partial=True, note="failed: the server went away"),
    TranscriptEntry("user", "fourth question", note="failed: connection refused"),
    TranscriptEntry("user", "x" * 4000),
    TranscriptEntry("assistant", "A whole reply."),
]


@pytest.fixture
def resuming_gateway(
    demo_server: DemoModelServer, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Gateway]:
    provider = ProviderConfig(base_url=demo_server.base_url, model="demo")
    gateway = Gateway(GatewayConfig(provider=provider, context_window=4096))
    saved_id = gateway.session_create("saved")

    def resume(session_id: str | None = None) -> ResumedSession:
        return ResumedSession(saved_id, "saved", "demo", list(SAVED))

    monkeypatch.setattr(gateway, "session_resume", resume)
    try:
        yield gateway
    finally:
        assert gateway.shutdown(timeout_s=5.0).threads_left == []


def resumed_app(gateway: Gateway, base_url: str) -> DeskApp:
    app = DeskApp(gateway, connection(base_url), handle_signals=False, startup=Startup(resume=True))
    app.controllers.export.wall_clock = lambda: datetime(2025, 6, 1, 12, 0)
    return app


def saved_notes(app: DeskApp) -> list[str]:
    return [reply.note for reply in app.transcript.query_children(SavedReply) if reply.note]


async def test_resumed_turns_show_who_stopped_them_and_why_they_failed(
    resuming_gateway: Gateway, demo_server: DemoModelServer
) -> None:
    app = resumed_app(resuming_gateway, demo_server.base_url)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: len(saved_notes(app)) == 4, what="the saved notes")
        assert saved_notes(app) == [
            "■ stopped by you",
            "■ stopped by the system: desk is shutting down",
            "✖ the server went away",
            "✖ connection refused",
        ]
        children = list(app.transcript.children)
        failed_early = [w for w in children if isinstance(w, UserPrompt)][3]
        after = children[children.index(failed_early) + 1]
        assert isinstance(after, SavedReply) and after.note == "✖ connection refused"
        assert after.has_class("-failed") and not after.text
        rendered = [str(s.render()) for s in app.transcript.query(".note")]
        assert "■ stopped by you" in rendered


async def test_export_of_a_resumed_session_has_its_replies_and_notes(
    resuming_gateway: Gateway, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    app = resumed_app(resuming_gateway, demo_server.base_url)
    target = tmp_path / "out.md"
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: len(saved_notes(app)) == 4, what="the saved notes")
        await submit(pilot, f"/export {target}")
        await wait_until(pilot, target.exists, what="the export")
    text = target.read_text(encoding="utf-8")
    assert text.count("## Assistant") == 5  # 4 replies and the early failure's error line
    assert "Half an ans\n\n> ■ stopped by you" in text
    assert "> ■ stopped by the system: desk is shutting down" in text
    assert "> ✖ connection refused" in text
    assert "A whole reply." in text


async def test_the_context_gauge_is_the_gateways_count_on_resume_and_on_new(
    resuming_gateway: Gateway, demo_server: DemoModelServer
) -> None:
    app = resumed_app(resuming_gateway, demo_server.base_url)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: saved_notes(app), what="the resumed transcript")
        bar = app.status_bar
        if not bar.window_note:  # no figure of another kind until the gateway counts it
            assert bar.context_used is None
            assert "ctx –" in bar.server_side_text()
        await wait_until(pilot, lambda: bar.window_note, what="the gateway's count")
        assert bar.context_used is not None and bar.context_used > 0
        old = app.session_id
        await submit(pilot, "/new A fresh plan")
        await wait_until(pilot, lambda: app.session_id != old, what="the switch to /new")
        # the new session's system prompt and tools, as the gateway counts them: not 0
        await wait_until(pilot, lambda: bar.context_used, what="the new session's count")
        budget = resuming_gateway.context_budget(app.session_id)
        tools = resuming_gateway._offered()
        assert bar.context_used == budget.count(resuming_gateway.history(app.session_id), tools)
        assert not list(app.transcript.query_children(SavedReply))


async def test_new_with_a_title_switches_and_the_next_prompt_goes_there(
    gateway: Gateway, demo_server: DemoModelServer
) -> None:
    demo_server.configure(tokens_per_second=400.0)  # whole replies: the pace is not the point
    app = DeskApp(gateway, connection(demo_server.base_url), handle_signals=False)
    async with app.run_test(size=(120, 40)) as pilot:
        first = app.session_id
        await submit_and_get_reply(app, pilot, "hello there")
        await wait_until(pilot, lambda: app.running_turn is None, what="the first turn")
        app.status_bar.context_used = 3000
        await submit(pilot, "/new My release plan")
        await wait_until(pilot, lambda: app.session_id != first, what="the switch")
        panel = app.query_one(ConsolePanel)
        assert f"new session {app.session_id}" in panel.text
        assert not list(app.transcript.query(AssistantReply))
        assert app.status_bar.context_used != 3000 and app.status_bar.state == "idle"
        reply = await submit_and_get_reply(app, pilot, "in the new one")
        assert gateway.turn(app.session_id, reply.turn_id) is not None
        await wait_until(pilot, lambda: reply.outcome is not None, what="the second turn")
        titles = {info.session_id: info.title for info in gateway.session_list()}
        assert titles.get(app.session_id) == "My release plan"


def test_which_slash_words_are_unknown_commands() -> None:
    assert unknown_command("/bogus thing") == "/bogus"
    assert unknown_command("/no-such") == "/no-such"
    assert unknown_command("/usr/bin/env is where?") is None  # a path
    assert unknown_command("/tmp is full") is None  # an existing absolute path
    assert unknown_command("/") is None
    assert unknown_command("//bogus") is None  # escaped
    assert unknown_command("/Bogus") is None
    assert unknown_command("hello /bogus") is None


async def test_an_unknown_command_says_so_and_sends_nothing(
    gateway: Gateway, demo_server: DemoModelServer
) -> None:
    demo_server.configure(tokens_per_second=400.0)  # a whole reply: the pace is not the point
    app = DeskApp(gateway, connection(demo_server.base_url), handle_signals=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await submit(pilot, "/bogus thing")
        await wait_until(
            pilot,
            lambda: any("unknown command /bogus" in str(n.render()) for n in app.query(".note")),
            what="the unknown-command line",
        )
        notes = [str(n.render()) for n in app.transcript.query_children(".note")]
        assert notes[-1] == "unknown command /bogus — F1 lists the commands"
        assert not list(app.transcript.query(UserPrompt))
        assert app.running_turn is None
        reply = await submit_and_get_reply(app, pilot, "/usr/bin is a folder")
        await wait_until(pilot, lambda: reply.outcome is not None, what="the path prompt's turn")


async def test_a_stop_receipt_reads_the_same_after_resume(
    demo_server: DemoModelServer, tmp_path: Path
) -> None:
    provider = ProviderConfig(base_url=demo_server.base_url, model="demo")
    demo_server.configure(tokens_per_second=20.0)
    gateway = Gateway(GatewayConfig(provider=provider), store=SqliteStore(tmp_path / "desk.db"))
    app = DeskApp(gateway, connection(demo_server.base_url), handle_signals=False)
    async with app.run_test(size=(120, 40)) as pilot:
        reply = await submit_and_get_reply(app, pilot, "Tell me about stopping streams")
        await wait_until(pilot, lambda: reply.text, what="streaming")
        await pilot.press("escape")
        await wait_until(pilot, lambda: reply.outcome == "interrupted", what="the stop")
        live = reply.note
    assert gateway.shutdown(timeout_s=5.0).threads_left == []  # quitting closed the store
    assert live.startswith("■ stopped by you · connection closed in ")

    gateway = Gateway(GatewayConfig(provider=provider), store=SqliteStore(tmp_path / "desk.db"))
    again = resumed_app(gateway, demo_server.base_url)
    async with again.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: saved_notes(again), what="the saved receipt")
        assert saved_notes(again) == [live]
    assert gateway.shutdown(timeout_s=5.0).threads_left == []


@pytest.mark.parametrize(
    ("command", "receipt"),
    [
        ("echo started; sleep 30", "■ stopped by you · shell (pid "),  # the tool it ended
        ("sleep 30 & sleep 30 & echo started; wait", "child processes ended"),  # and its count
    ],
)
async def test_a_shell_stop_receipt_reads_the_same_after_resume(
    demo_server: DemoModelServer, tmp_path: Path, command: str, receipt: str
) -> None:
    provider = ProviderConfig(base_url=demo_server.base_url, model="demo")
    config = GatewayConfig(provider=provider, cwd=tmp_path, approvals=False)
    gateway = Gateway(config, store=SqliteStore(tmp_path / "desk.db"))
    app = DeskApp(gateway, connection(demo_server.base_url), handle_signals=False)
    arguments = json.dumps({"command": command})
    async with app.run_test(size=(120, 40)) as pilot:
        reply = await submit_and_get_reply(app, pilot, f"call tool shell with {arguments}")
        tools = app.controllers.tools
        await wait_until(
            pilot, lambda: any("started" in c.output for c in tools.cards), what="the command"
        )
        await pilot.press("escape")
        await wait_until(pilot, lambda: reply.outcome == "interrupted", what="the stop")
        live = reply.note
    assert gateway.shutdown(timeout_s=5.0).threads_left == []
    assert receipt in live

    gateway = Gateway(config, store=SqliteStore(tmp_path / "desk.db"))
    again = resumed_app(gateway, demo_server.base_url)
    async with again.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: saved_notes(again), what="the saved receipt")
        assert saved_notes(again) == [live]
    assert gateway.shutdown(timeout_s=5.0).threads_left == []


async def test_after_new_the_status_bar_names_the_model_the_server_named(
    demo_server: DemoModelServer, tmp_path: Path
) -> None:
    """Started with no model named (the desk asks the server which it has): the first
    session and the one /new makes both show the server's model, never "no model yet"."""
    provider = ProviderConfig(base_url=demo_server.base_url, model="")
    gateway = Gateway(GatewayConfig(provider=provider, cwd=tmp_path))
    info = ConnectionInfo("", demo_server.base_url)
    app = DeskApp(gateway, info, handle_signals=False)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_until(pilot, lambda: gateway.server.status().model == "demo", what="model")
            await submit_and_get_reply(app, pilot, "hello there")
            old = app.session_id
            await submit(pilot, "/new")
            await wait_until(pilot, lambda: app.session_id != old, what="the switch to /new")
            text = app.status_bar.server_side_text()
            assert text.startswith("demo ·") and "no model yet" not in text
            await submit_and_get_reply(app, pilot, "reply with exactly: here")
            assert gateway.provider_for(app.session_id).model == "demo"
    finally:
        gateway.shutdown(timeout_s=5)


async def test_a_new_session_from_the_palette_or_a_deletion_shows_and_stores_the_model(
    demo_server: DemoModelServer, tmp_path: Path
) -> None:
    """Started with no model named: the session the palette's "New session" makes, and the
    one that replaces the deleted session on screen, show the server's model (the status bar
    said "no model yet") and are stored with it."""
    provider = ProviderConfig(base_url=demo_server.base_url, model="")
    db = tmp_path / "desk.db"
    gateway = Gateway(GatewayConfig(provider=provider, cwd=tmp_path), store=SqliteStore(db))
    app = DeskApp(gateway, ConnectionInfo("", demo_server.base_url), handle_signals=False)

    def stored_model(session_id: str) -> str | None:
        with SqliteStore(db) as store:
            row = store.sessions.get_session(session_id)
        return None if row is None else row.model

    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_until(pilot, lambda: gateway.server.status().model == "demo", what="model")
            await submit_and_get_reply(app, pilot, "hello there")
            old = app.session_id
            await app.run_action("new_session")
            await wait_until(pilot, lambda: app.session_id != old, what="the new session")
            assert app.status_bar.server_side_text().startswith("demo ·")
            await wait_until(pilot, lambda: stored_model(app.session_id) == "demo", what="saved")

            old = app.session_id
            await pilot.press("ctrl+b")
            sidebar = app.widgets.sidebar
            await wait_until(pilot, lambda: sidebar.selected() is not None, what="the list")
            selected = sidebar.selected()
            assert selected is not None and selected.info.session_id == old
            await pilot.press("delete")
            await wait_until(pilot, lambda: isinstance(app.screen, ConfirmDelete), what="modal")
            await pilot.press("y")
            await wait_until(pilot, lambda: app.session_id != old, what="the replacement")
            assert app.status_bar.server_side_text().startswith("demo ·")
            await wait_until(pilot, lambda: stored_model(app.session_id) == "demo", what="saved")
            assert stored_model(old) is None  # deleted
    finally:
        gateway.shutdown(timeout_s=5)
