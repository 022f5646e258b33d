"""A compression's outcome line ("⇊ compressed…", "⇊ compression cancelled…") is saved with its
session: ``desk --resume`` shows it again where it was, and an ``/export`` made then has it."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Button, Static

from agent.store import SqliteStore
from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.widgets import AssistantReply, UserPrompt
from desk.widgets.saved_reply import SavedReply
from desk.widgets.saved_summary import SavedSummary
from tests.desk.kit import click_until, submit, submit_and_get_reply, wait_until
from tests.desk.test_compression_desk import Setup, notes
from tui_gateway.gateway import Gateway

pytestmark = pytest.mark.anyio


@pytest.fixture
def tokens_per_second() -> float:
    return 400.0


def shown(app: DeskApp) -> list[str]:
    """The transcript's prompts, replies, summaries and compression lines, in order."""
    out: list[str] = []
    for child in app.transcript.children:
        if isinstance(child, UserPrompt):
            out.append(f"you: {child.text[:40]}")
        elif isinstance(child, AssistantReply | SavedReply):
            out.append(f"reply: {child.text[:40]}")
        elif isinstance(child, SavedSummary):
            out.append("summary")
        elif isinstance(child, Static) and child.has_class("compression-note"):
            out.append(str(child.render()))
    return out


def resumed(setup: Setup) -> tuple[DeskApp, Gateway, SqliteStore]:
    """The session opened again by a new gateway on the same database (as ``desk --resume``),
    once the first one has quit."""
    assert setup.gateway.shutdown(timeout_s=10).threads_left == []
    setup.store.close()
    store = SqliteStore(setup.store.path)
    setup.gateway = Gateway(setup.gateway.config, store=store)
    setup.store = store
    return setup.app(), setup.gateway, store


async def rendered(app: DeskApp, pilot: object) -> None:
    await wait_until(
        pilot,  # type: ignore[arg-type]
        lambda: app.controllers.sessions.resume_rendered_at is not None,
        what="the resumed transcript",
    )


async def test_a_compress_line_is_shown_again_on_resume_and_exported_in_its_place(
    demo_server: DemoModelServer, tmp_path: Path
) -> None:
    setup = Setup(demo_server, tmp_path / "desk.db")
    app = setup.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await submit(pilot, "/compress")
        await wait_until(pilot, lambda: notes(app), what="the outcome line")
        reply = await submit_and_get_reply(app, pilot, "reply with exactly: after it")
        await wait_until(pilot, lambda: reply.outcome is not None, what="the reply")
        live = shown(app)
    (line,) = notes_of(live)
    assert line.startswith("⇊ compressed ")
    assert live[-3:] == [line, "you: reply with exactly: after it", "reply: after it"]

    app, gateway, store = resumed(setup)
    target = tmp_path / "later.md"
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await rendered(app, pilot)
            again = shown(app)
            await submit(pilot, f"/export {target}")
            await wait_until(pilot, target.exists, what="the export")
        # the summary read in the place of what it replaced, the line after what was there
        assert again.index("summary") < again.index(line) and again[-3:] == live[-3:]
        exported = target.read_text()
        assert exported.count(f"> {line}") == 1
        assert exported.index(f"> {line}") < exported.index("reply with exactly: after it")
    finally:
        assert gateway.shutdown(timeout_s=10).threads_left == []
        store.close()


async def test_a_cancelled_compression_before_a_prompt_is_shown_again_between_it_and_its_reply(
    demo_server: DemoModelServer, tmp_path: Path
) -> None:
    # due at 30 % of a 5,000-token window with one exchange to summarise whichever count comes
    # first (see test_compression_desk); the summary stalls, so the click lands before it ends
    setup = Setup(demo_server, tmp_path / "desk.db", 5000, threshold=0.3, exchanges=5, tools=False)
    app = setup.app()
    async with app.run_test(size=(120, 40)) as pilot:
        demo_server.configure(fault="stall", fault_after_tokens=5, fault_times=1)
        reply = await submit_and_get_reply(app, pilot, "reply with exactly: went anyway")
        panel = app.widgets.compression_panel
        await wait_until(pilot, lambda: panel.running and panel.tokens_out >= 3, what="summary")
        cancel = app.query_one("#compression-cancel", Button)
        await click_until(pilot, cancel, lambda: notes(app), what="the outcome line")
        await wait_until(pilot, lambda: reply.outcome is not None, what="the reply")
        live = shown(app)
    (line,) = notes_of(live)
    assert line.startswith("⇊ compression cancelled by you · ")
    assert live[-3:] == ["you: reply with exactly: went anyway", line, "reply: went anyway"]

    app, gateway, store = resumed(setup)
    target = tmp_path / "later.md"
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await rendered(app, pilot)
            again = shown(app)
            await submit(pilot, f"/export {target}")
            await wait_until(pilot, target.exists, what="the export")
        assert again == live  # nothing was compressed: the same transcript, the line included
        exported = target.read_text()
        prompt = exported.index("reply with exactly: went anyway")
        assert prompt < exported.index(f"> {line}") < exported.index("\nwent anyway")
    finally:
        assert gateway.shutdown(timeout_s=10).threads_left == []
        store.close()


def notes_of(blocks: list[str]) -> list[str]:
    return [b for b in blocks if b.startswith("⇊ ")]


async def test_an_export_after_resume_holds_the_messages_a_compression_replaced(
    demo_server: DemoModelServer, tmp_path: Path
) -> None:
    setup = Setup(demo_server, tmp_path / "desk.db")
    app = setup.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await submit(pilot, "/compress")
        await wait_until(pilot, lambda: notes(app), what="the outcome line")

    app, gateway, store = resumed(setup)
    archived = [m.content for m in store.transcript.all_messages(setup.session) if not m.active]
    assert archived  # the compression replaced some of the exchanges
    target = tmp_path / "later.md"
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await rendered(app, pilot)
            again = shown(app)
            await submit(pilot, f"/export {target}")
            await wait_until(pilot, target.exists, what="the export")
        assert "summary" in again and not any(a[:40] in "\n".join(again) for a in archived)
        exported = target.read_text()
        # every exchange, as the store keeps it, in order: the replaced ones above the summary
        places = [exported.index(f"question {i}: ") for i in range(8)]
        places += [exported.index(f"answer {i}: ") for i in range(8)]
        assert sorted(places[:8]) == places[:8] and sorted(places[8:]) == places[8:]
        assert all(
            exported.index(f"question {i}: ") < exported.index(f"answer {i}: ") for i in range(8)
        )
        summary = exported.index("> ⇊ the conversation above, as compressed into a summary")
        gone = [i for i in range(8) if any(a.startswith(f"question {i}: ") for a in archived)]
        assert gone and all(exported.index(f"question {i}: ") < summary for i in gone)
        assert all(exported.index(f"question {i}: ") > summary for i in range(gone[-1] + 1, 8))
    finally:
        assert gateway.shutdown(timeout_s=10).threads_left == []
        store.close()
