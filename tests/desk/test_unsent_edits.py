"""Editing a prompt not sent when the desk last closed (offered again on resume): Up and
Down keep the edit, and the prompt sent with its new text is offered no more."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from textual.widgets import Static

from agent.provider.client import ProviderConfig
from agent.store import SessionStore, SqliteStore
from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.startup import Startup
from desk.widgets import PromptInput, UserPrompt
from desk.widgets.queued_item import QueuedItem
from tests.desk.kit import connection, submit, submit_and_get_reply, wait_until
from tests.desk.test_queued_prompts import LONG_PROMPT, lines, quit_desk
from tui_gateway.gateway import Gateway, GatewayConfig

pytestmark = pytest.mark.anyio

HELD = [("not sent", "NS-ONE"), ("not sent", "NS-TWO")]


OpenStore = Callable[[], SessionStore]
"""Opens the test's store again (each desk run opens its own, as a new desk does)."""


@pytest.fixture(params=["sqlite", "postgres"])
def open_store(request: pytest.FixtureRequest, tmp_path: Path) -> OpenStore:
    """The store of the test's desks: SQLite in a file, or PostgreSQL on a schema of its own."""
    if request.param == "sqlite":
        return lambda: SqliteStore(tmp_path / "desk.db")
    open_host = request.getfixturevalue("open_host")
    return lambda: open_host("desk-host")  # type: ignore[no-any-return]


def store_gateway(server: DemoModelServer, store: OpenStore, cwd: Path) -> Gateway:
    """A gateway on a store opened again, its workspace ``cwd``."""
    provider = ProviderConfig(base_url=server.base_url, model="demo")
    return Gateway(GatewayConfig(provider=provider, cwd=cwd), store=store())


async def leave_two_unsent(server: DemoModelServer, db: OpenStore, cwd: Path) -> str:
    """A session closed with NS-ONE and NS-TWO still queued; its id."""
    server.configure(tokens_per_second=8.0)  # the first turn outlasts the queueing
    gateway = store_gateway(server, db, cwd)
    app = DeskApp(gateway, connection(server.base_url), handle_signals=False)
    async with app.run_test(size=(120, 40)) as pilot:
        first = await submit_and_get_reply(app, pilot, LONG_PROMPT)
        await wait_until(pilot, lambda: first.text, what="streaming")
        await submit(pilot, "NS-ONE")
        await submit(pilot, "NS-TWO")
        await wait_until(pilot, lambda: len(lines(app)) == 2, what="two queued")
        session = app.session_id
        await quit_desk(app, pilot)
    gateway.shutdown(timeout_s=5.0)
    server.configure(tokens_per_second=400.0)
    return session


def resumed(
    server: DemoModelServer, db: OpenStore, cwd: Path, session: str
) -> tuple[DeskApp, Gateway]:
    gateway = store_gateway(server, db, cwd)
    startup = Startup(resume=True, resume_id=session)
    app = DeskApp(gateway, connection(server.base_url), handle_signals=False, startup=startup)
    return app, gateway


async def test_up_and_down_keep_editing_a_prompt_not_sent(
    demo_server: DemoModelServer, tmp_path: Path
) -> None:
    db: OpenStore = lambda: SqliteStore(tmp_path / "desk.db")  # noqa: E731
    session = await leave_two_unsent(demo_server, db, tmp_path)
    app, gateway = resumed(demo_server, db, tmp_path, session)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_until(pilot, lambda: lines(app) == HELD, what="the offered prompts")
            reply = await submit_and_get_reply(app, pilot, "reply with exactly: OLDER")
            await wait_until(pilot, lambda: reply.text == "OLDER", what="its reply")
            await wait_until(pilot, lambda: not gateway.running_turns, what="idle")
            box = app.query_one(PromptInput)
            await pilot.press("up")  # on an empty box: the last prompt offered
            await wait_until(pilot, lambda: box.editing is not None, what="the edit")
            assert box.text == "NS-TWO"
            notes = [str(i.query_one(".editing", Static).render()) for i in app.query(QueuedItem)]
            assert "Enter sends it" in "".join(notes)  # not "saves it here": it is sent
            assert box.check_action("send_edit", ()) and not box.check_action("save_edit", ())
            await pilot.press("up", "up", "down", "up")
            assert (box.text, box.editing is not None) == ("NS-TWO", True)
            await pilot.press("end", "space", *"EDITX", "enter")
            await wait_until(pilot, lambda: lines(app) == HELD[:1], what="the edit sent")
            await wait_until(pilot, lambda: not gateway.running_turns, what="its turn's end")
            shown = [p.text for p in app.transcript.query(UserPrompt)]
            assert shown[-2:] == ["reply with exactly: OLDER", "NS-TWO EDITX"]
            await quit_desk(app, pilot)
    finally:
        gateway.shutdown(timeout_s=5.0)


async def test_a_prompt_not_sent_sent_edited_is_not_offered_again(
    demo_server: DemoModelServer, open_store: OpenStore, tmp_path: Path
) -> None:
    db = open_store
    session = await leave_two_unsent(demo_server, db, tmp_path)
    app, gateway = resumed(demo_server, db, tmp_path, session)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_until(pilot, lambda: lines(app) == HELD, what="the offered prompts")
            box = app.query_one(PromptInput)
            await pilot.press("up")
            await wait_until(pilot, lambda: box.text == "NS-TWO", what="the edit")
            await pilot.press("end", "space", *"EDITX", "enter")
            await wait_until(pilot, lambda: lines(app) == HELD[:1], what="the edit sent")
            await wait_until(pilot, lambda: not gateway.running_turns, what="its turn's end")
            await quit_desk(app, pilot)
    finally:
        gateway.shutdown(timeout_s=5.0)

    app, gateway = resumed(demo_server, db, tmp_path, session)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_until(pilot, lambda: app.session_id == session, what="the resume")
            await wait_until(pilot, lambda: lines(app), what="the offered prompt")
            await pilot.pause()
            assert lines(app) == HELD[:1]  # NS-TWO was sent (edited): offered no more
            shown = [p.text for p in app.transcript.query(UserPrompt)]
            assert shown.count("NS-TWO EDITX") == 1
    finally:
        gateway.shutdown(timeout_s=5.0)
