"""``/export``: the session as Markdown, written atomically, with a line saying where."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from demo_model.replies import reply_for, tokenize
from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.config import ConnectionInfo
from desk.export import ExportBlock, session_markdown
from desk.markdown_cuts import closed_fences
from desk.widgets import PromptInput
from tests.desk.desk_testkit import (
    pinned_receipt,
    submit,
    submit_and_get_reply,
    user_message,
    wait_until,
)
from tui_gateway.gateway import Gateway

pytestmark = pytest.mark.anyio

WHEN = datetime(2025, 3, 14, 9, 26)
STALL_AFTER = 6


@pytest.fixture
def app(gateway: Gateway, demo_server: DemoModelServer) -> DeskApp:
    info = ConnectionInfo("demo", demo_server.base_url, is_demo=True, source="--demo")
    desk = DeskApp(gateway, info, handle_signals=False, receipt_formatter=pinned_receipt)
    desk.controllers.export.wall_clock = lambda: WHEN
    return desk


async def test_export_writes_prompts_replies_receipts_and_errors(
    app: DeskApp, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    target = tmp_path / "out" / "talk.md"
    async with app.run_test(size=(100, 30)) as pilot:
        done = await submit_and_get_reply(app, pilot, "reply with exactly: All **done**.")
        await wait_until(pilot, lambda: done.outcome is not None, what="the first reply")

        demo_server.configure(fault="stall", fault_after_tokens=STALL_AFTER)
        stopped = await submit_and_get_reply(app, pilot, "Tell me about stops")
        partial = "".join(tokenize(reply_for(user_message("Tell me about stops")))[:STALL_AFTER])
        await wait_until(pilot, lambda: stopped.text == partial, what="the stalled partial")
        await pilot.press("escape")
        await wait_until(pilot, lambda: stopped.outcome is not None, what="the stop")

        demo_server.configure(fault="http:500", fault_times=1)
        failed = await submit_and_get_reply(app, pilot, "and now?")
        await wait_until(pilot, lambda: failed.outcome is not None, what="the failure")

        await submit(pilot, f"/export {target}")
        notes = [str(n.content) for n in app.transcript.query(".note")]
        assert app.query_one(PromptInput).text == ""

    assert notes[-1] == f"⇩ exported 6 blocks to {target}"
    expected = "\n\n".join(
        [
            f"# desk session {app.session_id}",
            "Model: demo · exported 2025-03-14 09:26",
            "## You",
            "reply with exactly: All **done**.",
            "## Assistant",
            "All **done**.",
            "## You",
            "Tell me about stops",
            "## Assistant",
            partial.strip(),
            "> ■ stopped by you · connection closed in 3 ms · worker exited in 4 ms",
            "## You",
            "and now?",
            "## Assistant",
            f"> {failed.note}",
        ]
    )
    assert target.read_text() == expected + "\n"
    assert failed.note.startswith("✖ ")
    assert sorted(p.name for p in target.parent.iterdir()) == ["talk.md"]


async def test_export_without_a_path_uses_the_default_name(
    app: DeskApp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        reply = await submit_and_get_reply(app, pilot, "reply with exactly: hi")
        await wait_until(pilot, lambda: reply.outcome is not None, what="the reply")
        await submit(pilot, "/export")
        session = app.session_id
    path = tmp_path / f"desk-{session}-2025-03-14.md"
    assert path.read_text().endswith("## You\n\nreply with exactly: hi\n\n## Assistant\n\nhi\n")


async def test_export_to_an_unwritable_place_says_why(app: DeskApp, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    async with app.run_test(size=(100, 30)) as pilot:
        await submit(pilot, f"/export {blocker}/inside/x.md")
        errors = [str(n.content) for n in app.transcript.query(".note.-error")]
    assert len(errors) == 1
    assert errors[0].startswith(f"✖ export failed: cannot write {blocker}/inside/x.md: ")


def test_a_reply_stopped_inside_a_code_block_is_exported_with_the_block_closed() -> None:
    blocks = [
        ExportBlock("user", "write it"),
        ExportBlock(
            "assistant", "Here:\n\n```python\ndef f():\n    return 1", "■ stopped by you", "x"
        ),
    ]
    doc = session_markdown(blocks, session_id="s", model="m", exported_at=datetime(2026, 1, 1))
    tokens = MarkdownIt().parse(doc)
    fence = next(t for t in tokens if t.type == "fence")
    assert fence.content == "def f():\n    return 1\n"  # the receipt is not part of the code
    assert doc.rstrip().endswith("> ■ stopped by you")
    assert [t.type for t in tokens].count("blockquote_open") == 1


def test_closing_fences_leaves_closed_and_unfenced_text_alone() -> None:
    assert closed_fences("a\n\n```\nx\n```") == "a\n\n```\nx\n```"
    assert closed_fences("plain") == "plain"
    assert closed_fences("~~~~\ncode\n```\nmore") == "~~~~\ncode\n```\nmore\n~~~~"
