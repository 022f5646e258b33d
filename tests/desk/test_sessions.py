"""Saved sessions in the desk: resume, the sidebar (open, rename, delete), notices."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.provider.client import ProviderConfig
from agent.store import SqliteStore
from demo_model.server import DemoModelServer
from desk.__main__ import exit_lines
from desk.app import DeskApp
from desk.config import parse_options
from desk.screens.confirm_delete import ConfirmDelete
from desk.startup import Startup, unsaved_notice
from desk.widgets import UserPrompt
from desk.widgets.earlier_messages import EarlierMessages
from desk.widgets.saved_reply import SavedReply
from desk.widgets.saved_tool_calls import SavedToolCalls
from desk.widgets.session_item import relative_time
from tests.desk.kit import connection, submit_and_get_reply, wait_until
from tests.desk.saved_sessions_kit import (
    NEWER_ID,
    OLDER_ID,
    SAVED_AT,
    build_long_store,
    build_store,
)
from tests.support import claimed, locked, release
from tui_gateway.assembly import StoreUnavailable, build_gateway
from tui_gateway.gateway import Gateway, GatewayConfig

pytestmark = pytest.mark.anyio


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "desk.db"
    build_store(path)
    return path


@pytest.fixture
def store_gateway(demo_server: DemoModelServer, db: Path) -> Iterator[Gateway]:
    provider = ProviderConfig(base_url=demo_server.base_url, model="demo")
    gateway = Gateway(GatewayConfig(provider=provider), store=SqliteStore(db))
    try:
        yield gateway
    finally:
        assert gateway.shutdown(timeout_s=5.0).threads_left == []


def make_app(gateway: Gateway, base_url: str, **startup: object) -> DeskApp:
    return DeskApp(
        gateway,
        connection(base_url),
        handle_signals=False,
        startup=Startup(wall_clock=lambda: SAVED_AT + 3600 + 300, **startup),  # type: ignore[arg-type]
    )


def blocks(app: DeskApp) -> list[tuple[str, str]]:
    """The transcript below the banner as (kind, text) pairs."""
    out = []
    for widget in app.transcript.children:
        if isinstance(widget, UserPrompt):
            out.append(("user", widget.text))
        elif isinstance(widget, SavedReply):
            out.append(("assistant" + (" (partial)" if widget.partial else ""), widget.text))
        elif isinstance(widget, SavedToolCalls):
            out.append(("tools", str(widget.render())))
    return out


def notes(app: DeskApp) -> list[str]:
    """The note lines of the transcript (notices, not turns)."""
    return [str(w.render()) for w in app.transcript.query_children(".note")]


def test_relative_times() -> None:
    assert relative_time(None, 100.0) == "not saved"
    assert relative_time(100.0, 130.0) == "just now"
    assert relative_time(0.0, 300.0) == "5 min ago"
    assert relative_time(0.0, 3 * 3600.0) == "3 h ago"
    assert relative_time(0.0, 2 * 86_400.0) == "2 d ago"
    assert relative_time(0.0, 30 * 86_400.0) == "4 w ago"


async def test_resume_the_most_recent_session_shows_its_transcript(
    store_gateway: Gateway, demo_server: DemoModelServer
) -> None:
    app = make_app(store_gateway, demo_server.base_url, resume=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(
            pilot,
            lambda: app.controllers.sessions.resume_rendered_at is not None,
            what="the render",
        )
        assert app.session_id == NEWER_ID
        assert blocks(app) == [
            ("user", "Why does test_stop fail sometimes?"),
            ("tools", "⚙ shell → 1 failed, 41 passed"),
            ("assistant", "It waits with a **sleep**; wait on an event instead."),
            ("user", "Show me the fix"),
            ("assistant (partial)", "Here is the fix: replace the"),
        ]
        partial = app.transcript.query(SavedReply).last()
        assert "stopped" in str(partial.query_one(".note").render())

        # The resumed session goes on: a new turn sees the saved history.
        reply = await submit_and_get_reply(app, pilot, "reply with exactly: resumed")
        await wait_until(pilot, lambda: reply.outcome is not None, what="the new turn")
        assert reply.text == "resumed"
        assert len(store_gateway.history(NEWER_ID)) == 8


async def test_resume_by_id(store_gateway: Gateway, demo_server: DemoModelServer) -> None:
    app = make_app(store_gateway, demo_server.base_url, resume=True, resume_id=OLDER_ID)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(
            pilot,
            lambda: app.controllers.sessions.resume_rendered_at is not None,
            what="the render",
        )
        assert app.session_id == OLDER_ID
        assert blocks(app)[0] == ("user", "What is left before the release?")


async def test_resume_of_an_unknown_id_says_so_and_starts_a_new_session(
    store_gateway: Gateway, demo_server: DemoModelServer
) -> None:
    app = make_app(store_gateway, demo_server.base_url, resume=True, resume_id="nope")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: notes(app), what="the notice")
        (note,) = notes(app)
        assert note.startswith("⚠ cannot resume: no saved session 'nope'")
        assert app.session_id not in (OLDER_ID, NEWER_ID)


async def test_a_session_open_in_another_desk_is_refused_in_one_line_and_the_desk_goes_on(
    store_gateway: Gateway, demo_server: DemoModelServer, db: Path
) -> None:
    with claimed(db, NEWER_ID) as other:  # desk A has it open
        app = make_app(store_gateway, demo_server.base_url, resume=True, resume_id=NEWER_ID)
        async with app.run_test(size=(160, 40)) as pilot:
            await wait_until(pilot, lambda: notes(app), what="the notice")
            assert notes(app) == [
                f"⚠ cannot resume: session {NEWER_ID} is open in another desk (pid {other.pid});"
                " close it there first; this is a new session"
            ]
            (note,) = app.transcript.query_children(".note")
            assert note.size.height == 1  # one line on screen, no traceback
            assert app.session_id not in (OLDER_ID, NEWER_ID) and blocks(app) == []
            assert NEWER_ID not in store_gateway.live_sessions()
            reply = await submit_and_get_reply(app, pilot, "reply with exactly: still here")
            await wait_until(pilot, lambda: reply.outcome is not None, what="the new turn")
            assert reply.text == "still here"


async def test_the_sidebar_lists_opens_renames_and_deletes_with_a_confirmation(
    store_gateway: Gateway, demo_server: DemoModelServer, db: Path
) -> None:
    app = make_app(store_gateway, demo_server.base_url, resume=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(
            pilot,
            lambda: app.controllers.sessions.resume_rendered_at is not None,
            what="the render",
        )
        await pilot.press("ctrl+b")
        sidebar = app.widgets.sidebar
        await wait_until(pilot, lambda: len(sidebar.items) == 2, what="the list")
        assert sidebar.is_open and sidebar.list_view.has_focus
        first, second = sidebar.items
        assert first.info.session_id == NEWER_ID and first.has_class("-current")
        assert str(first.query_one(".meta").render()) == "demo · 5 min ago"
        assert str(second.query_one(".meta").render()) == "demo · 1 h ago"

        # Open the older one.
        await pilot.press("down", "enter")
        await wait_until(pilot, lambda: app.session_id == OLDER_ID, what="the switch")
        assert not sidebar.is_open
        assert blocks(app) == [
            ("user", "What is left before the release?"),
            ("assistant", "Two things: the **changelog** and the tag."),
        ]

        # Rename it.
        await pilot.press("ctrl+b")
        await wait_until(pilot, lambda: len(sidebar.items) == 2, what="the list")
        sidebar.list_view.index = [i.info.session_id for i in sidebar.items].index(OLDER_ID)
        await pilot.press("ctrl+r")
        box = sidebar.query_one("#session-rename")
        await wait_until(pilot, lambda: box.has_focus, what="the rename box")
        box.value = "Ship 1.0"  # type: ignore[attr-defined]
        await pilot.press("enter")
        await wait_until(
            pilot,
            lambda: any(i.info.title == "Ship 1.0" for i in sidebar.items),
            what="the new title",
        )

        # Delete the newer one: Delete asks first; n keeps it, y deletes it.
        sidebar.list_view.index = [i.info.session_id for i in sidebar.items].index(NEWER_ID)
        await pilot.press("delete")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmDelete), what="the modal")
        await pilot.press("n")
        await wait_until(pilot, lambda: not isinstance(app.screen, ConfirmDelete), what="close")
        assert len(sidebar.items) == 2
        # Typing on (a prompt meant for the input, with a "y" in it) never confirms.
        await pilot.press("delete")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmDelete), what="the modal")
        await pilot.press("ctrl+b", "x", "y", "z")
        await wait_until(pilot, lambda: not isinstance(app.screen, ConfirmDelete), what="close")
        assert len(sidebar.items) == 2
        if not sidebar.is_open:
            await pilot.press("ctrl+b")
            await wait_until(pilot, lambda: sidebar.is_open, what="the sidebar")
        sidebar.list_view.focus()
        sidebar.list_view.index = [i.info.session_id for i in sidebar.items].index(NEWER_ID)
        await pilot.press("delete")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmDelete), what="the modal")
        await pilot.press("y")
        await wait_until(pilot, lambda: len(sidebar.items) == 1, what="the deletion")
        assert app.session_id == OLDER_ID  # the session on screen was not the one deleted

    with SqliteStore(db) as store:
        assert store.sessions.get_session(NEWER_ID) is None
        older = store.sessions.get_session(OLDER_ID)
        assert older is not None and older.title == "Ship 1.0"


async def test_deleting_the_session_on_screen_starts_a_new_one(
    store_gateway: Gateway, demo_server: DemoModelServer
) -> None:
    app = make_app(store_gateway, demo_server.base_url, resume=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(
            pilot,
            lambda: app.controllers.sessions.resume_rendered_at is not None,
            what="the render",
        )
        await pilot.press("ctrl+b")
        sidebar = app.widgets.sidebar
        await wait_until(pilot, lambda: len(sidebar.items) == 2, what="the list")
        await pilot.press("delete")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmDelete), what="the modal")
        await pilot.click("#confirm-delete")
        await wait_until(pilot, lambda: app.session_id != NEWER_ID, what="a new session")
        assert blocks(app) == []

        def listed() -> bool:  # the sidebar lists the sessions again once it has asked
            ids = [i.info.session_id for i in sidebar.items]
            return NEWER_ID not in ids and OLDER_ID in ids

        await wait_until(pilot, listed, what="the sidebar without the deleted session")


async def test_a_long_session_renders_its_recent_messages_and_shows_more_on_request(
    demo_server: DemoModelServer, tmp_path: Path
) -> None:
    path = tmp_path / "long.db"
    build_long_store(path, 250)
    provider = ProviderConfig(base_url=demo_server.base_url, model="demo")
    gateway = Gateway(GatewayConfig(provider=provider), store=SqliteStore(path))
    app = make_app(gateway, demo_server.base_url, resume=True, recent_messages=100)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_until(
                pilot,
                lambda: app.controllers.sessions.resume_rendered_at is not None,
                what="render",
            )
            shown = blocks(app)
            assert len(shown) == 100 and shown[0] == ("user", "message 150")
            line = app.transcript.query_one(EarlierMessages)
            assert str(line.render()) == "▲ 150 earlier messages · show more"
            app.transcript.scroll_home(animate=False)
            await pilot.pause()
            await pilot.click(EarlierMessages)
            await wait_until(pilot, lambda: len(blocks(app)) == 200, what="more")
            assert line.count == 50 and blocks(app)[0] == ("user", "message 50")
            line.focus()
            await pilot.press("enter")
            await wait_until(pilot, lambda: len(blocks(app)) == 250, what="the rest")
            assert not line.is_attached
            assert blocks(app)[0] == ("user", "message 0")
    finally:
        gateway.shutdown(timeout_s=5.0)


async def test_a_database_that_cannot_open_gives_a_notice_and_the_desk_works(
    demo_server: DemoModelServer, tmp_path: Path
) -> None:
    settings = parse_options(["--db", str(tmp_path)], {}).settings  # a directory, not a database
    provider = ProviderConfig(base_url=demo_server.base_url, model="demo")
    with pytest.raises(StoreUnavailable) as info:
        build_gateway(settings, provider)
    notice = unsaved_notice(info.value.reason)
    assert notice.startswith("sessions are not saved: ") and "directory" in notice
    assert "\n" not in notice
    gateway = build_gateway(settings, provider, persist=False)
    app = make_app(gateway, demo_server.base_url, notice=notice, saved=False)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_until(pilot, lambda: notes(app), what="the notice")
            assert notes(app) == [f"⚠ {notice}"]
            reply = await submit_and_get_reply(app, pilot, "reply with exactly: still here")
            await wait_until(pilot, lambda: reply.outcome is not None, what="the turn")
            assert reply.text == "still here"
            assert app.controllers.sessions.resume_hint() == ""  # it was never saved
    finally:
        gateway.shutdown(timeout_s=5.0)


async def test_a_store_error_is_one_line_and_the_turn_goes_on(
    demo_server: DemoModelServer, tmp_path: Path
) -> None:
    store = SqliteStore(tmp_path / "desk.db")
    provider = ProviderConfig(base_url=demo_server.base_url, model="demo")
    gateway = Gateway(GatewayConfig(provider=provider), store=store)
    app = make_app(gateway, demo_server.base_url)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            store.close()  # every later write fails
            reply = await submit_and_get_reply(app, pilot, "reply with exactly: kept")
            await wait_until(pilot, lambda: reply.outcome is not None, what="the turn")
            await wait_until(pilot, lambda: notes(app), what="the line")
            (text,) = notes(app)
            assert text.startswith("⚠ cannot ") and "in memory only" in text
            assert "\n" not in text
            assert reply.text == "kept"
    finally:
        gateway.shutdown(timeout_s=5.0)


async def test_saving_that_waits_for_the_database_says_so_and_loses_nothing(
    demo_server: DemoModelServer, tmp_path: Path
) -> None:
    db = tmp_path / "desk.db"
    store = SqliteStore(db, busy_timeout_s=0.2)
    provider = ProviderConfig(base_url=demo_server.base_url, model="demo")
    gateway = Gateway(GatewayConfig(provider=provider), store=store)
    app = make_app(gateway, demo_server.base_url)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            with locked(db) as locker:  # another program holds the database
                reply = await submit_and_get_reply(app, pilot, "reply with exactly: kept")
                await wait_until(pilot, lambda: reply.outcome is not None, what="the turn")
                await wait_until(
                    pilot,
                    lambda: "⚠ saving is waiting for the database" in app.status_bar.turn_text(),
                    what="the status bar's warning",
                )
                release(locker)
                await wait_until(
                    pilot, lambda: "saving" not in app.status_bar.turn_text(), what="all saved"
                )
            assert notes(app) == []  # nothing was given up
            session = app.session_id
    finally:
        gateway.shutdown(timeout_s=5.0)
    with SqliteStore(db) as check:
        assert [m.content for m in check.transcript.active_messages(session)][-1] == "kept"


async def test_a_quit_the_database_outlasts_says_where_the_unsaved_reply_is(
    demo_server: DemoModelServer, tmp_path: Path
) -> None:
    db = tmp_path / "desk.db"
    provider = ProviderConfig(base_url=demo_server.base_url, model="demo")
    config = GatewayConfig(provider=provider, store_wait_s=0.3, unsaved_dir=tmp_path / "unsaved")
    gateway = Gateway(config, store=SqliteStore(db, busy_timeout_s=0.2))
    app = make_app(gateway, demo_server.base_url)
    try:
        with locked(db):
            async with app.run_test(size=(120, 40)) as pilot:
                reply = await submit_and_get_reply(app, pilot, "reply with exactly: in the file")
                await wait_until(pilot, lambda: reply.outcome is not None, what="the turn")
                await pilot.press("ctrl+q")
                await wait_until(None, lambda: app.return_code is not None, what="the exit")
    finally:
        gateway.shutdown(timeout_s=5.0)
    report = app.shutdown_report
    assert report is not None
    (path,) = report.unsaved
    assert "in the file" in Path(path).read_text()
    lines = exit_lines(app.resume_hint, report)
    assert lines == [
        f"desk: what could not be saved is in {path}",
        f"to resume this session: desk --resume {app.session_id}",
    ]


async def test_an_evicted_session_says_so(demo_server: DemoModelServer, tmp_path: Path) -> None:
    provider = ProviderConfig(base_url=demo_server.base_url, model="demo")
    gateway = Gateway(GatewayConfig(provider=provider, max_sessions=1))
    app = make_app(gateway, demo_server.base_url)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            shown = app.session_id
            gateway.session_create("another frontend's session")  # evicts the desk's
            await wait_until(pilot, lambda: notes(app), what="the notice")
            (text,) = notes(app)
            assert "closed by the gateway (too many live sessions)" in text
            assert shown not in gateway.live_sessions()
    finally:
        gateway.shutdown(timeout_s=5.0)


@pytest.mark.parametrize("tokens_per_second", [8.0])  # the turn outlasts the test
async def test_back_to_a_session_whose_turn_runs_esc_still_stops_it(
    desk_app: DeskApp, gateway: Gateway
) -> None:
    async with desk_app.run_test(size=(120, 40)) as pilot:
        first = desk_app.session_id
        reply = await submit_and_get_reply(desk_app, pilot, "Tell me about stopping streams")
        await wait_until(pilot, lambda: reply.text, what="streaming")
        await desk_app.action_new_session()
        assert desk_app.session_id != first and desk_app.running_turn is None

        await pilot.press("ctrl+b")
        sidebar = desk_app.widgets.sidebar
        await wait_until(pilot, lambda: len(sidebar.items) == 2, what="the list")
        running = [i for i in sidebar.items if i.info.running]
        assert [i.info.session_id for i in running] == [first]
        sidebar.list_view.index = sidebar.items.index(running[0])
        await pilot.press("enter")
        await wait_until(pilot, lambda: desk_app.session_id == first, what="the switch back")
        assert desk_app.running_turn == reply.turn_id

        await pilot.press("escape")
        await wait_until(pilot, lambda: gateway.running_turns == 0, what="the stop")
        turn = gateway.turn(first, reply.turn_id)
        assert turn.result is not None and turn.result.exit_reason == "interrupted_by_user"
