"""``/export``: the session as Markdown, written atomically, with a line saying where."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from textual.pilot import Pilot

from agent.provider.client import ProviderConfig
from agent.store import SqliteStore
from agent.usage import TokenUsage
from demo_model.replies import reply_for, tokenize
from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.config import ConnectionInfo
from desk.export import ExportBlock, session_markdown
from desk.markdown_cuts import closed_fences
from desk.receipts import usage_phrase
from desk.startup import Startup
from desk.widgets import PromptInput
from desk.widgets.tool_card import ToolCard
from tests.desk.kit import (
    connection,
    pinned_receipt,
    submit,
    submit_and_get_reply,
    user_message,
    wait_until,
)
from tests.support import EventLog
from tui_gateway.gateway import Gateway, GatewayConfig

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
    target.parent.mkdir()
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
        usage = app.controllers.sessions.view.usage if app.controllers.sessions.view else None

    # The completed reply as the server counted it, the stopped one by desk's estimate; the
    # refused request (HTTP 500) cost nothing.
    assert usage is not None and (usage.requests, usage.estimated_requests) == (2, 1)
    first = demo_server.records.list()[0]
    completion = usage.completion_tokens - first.tokens_generated
    cut = TokenUsage(1, usage.prompt_tokens - first.prompt_tokens, completion, 0, 1)

    assert notes[-1] == f"⇩ exported 6 blocks to {target}"
    expected = "\n\n".join(
        [
            "# reply with exactly: All **done**.",  # the first prompt names the session
            f"Session {app.session_id} · model: demo · exported 2025-03-14 09:26",
            f"Tokens: {usage.line()}",
            "## You",
            "reply with exactly: All **done**.",
            "## Assistant",
            "All **done**.",
            "## You",
            "Tell me about stops",
            "## Assistant",
            partial.strip(),
            "> ■ stopped by you · connection closed in 3 ms · worker exited in 4 ms · "
            + usage_phrase(cut),
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


async def test_export_is_headed_by_the_title_the_session_has_now(
    app: DeskApp, gateway: Gateway, tmp_path: Path
) -> None:
    target = tmp_path / "renamed.md"
    async with app.run_test(size=(100, 30)) as pilot:
        reply = await submit_and_get_reply(app, pilot, "reply with exactly: hi")
        await wait_until(pilot, lambda: reply.outcome is not None, what="the reply")
        gateway.session_rename(app.session_id, "Release   plan\nfor May")
        await submit(pilot, f"/export {target}")
        session = app.session_id
    head = target.read_text().splitlines()[:3]
    assert head == [
        "# Release plan for May",
        "",
        f"Session {session} · model: demo · exported 2025-03-14 09:26",
    ]


def shell_prompt(command: str) -> str:
    return "call tool shell with " + json.dumps({"command": command})


@pytest.fixture
def tool_app(demo_server: DemoModelServer, tmp_path: Path) -> Iterator[DeskApp]:
    provider = ProviderConfig(base_url=demo_server.base_url, model="demo")
    gateway = Gateway(GatewayConfig(provider=provider, cwd=tmp_path, approvals=False))
    desk = DeskApp(gateway, connection(demo_server.base_url), handle_signals=False)
    desk.controllers.export.wall_clock = lambda: WHEN
    try:
        yield desk
    finally:
        assert gateway.shutdown(timeout_s=5.0).threads_left == []


async def test_export_has_each_tool_call_its_arguments_capped_output_and_stop(
    tool_app: DeskApp, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    demo_server.configure(tokens_per_second=400.0)  # replies whole: the stop is in the tool
    app, target = tool_app, tmp_path / "tools.md"
    async with app.run_test(size=(120, 40)) as pilot:
        done = await submit_and_get_reply(app, pilot, shell_prompt("seq 1 20000"))
        await wait_until(pilot, lambda: done.outcome is not None, timeout_s=30, what="seq")
        stopped = await submit_and_get_reply(app, pilot, shell_prompt("echo started; sleep 30"))
        card = await wait_for_card(app, pilot, "sleep 30")
        await wait_until(pilot, lambda: "started" in card.output, what="the sleep's output")
        await pilot.press("escape")
        await wait_until(pilot, lambda: stopped.outcome is not None, what="the stop")
        await submit(pilot, f"/export {target}")
    text = target.read_text()
    assert text.count("### Tool call: shell") == 2
    assert '```json\n{\n  "command": "seq 1 20000"\n}\n```' in text
    seq_output = text.split('{\n  "command": "seq 1 20000"', 1)[1].split("### Tool call", 1)[0]
    assert "Result: ✓ exit 0" in seq_output
    assert seq_output.count("\n") < 1_000  # capped: 20,000 lines of output are not all there
    assert "\n1\n2\n3\n" in seq_output and "\n19999\n20000\n" in seq_output
    assert "characters left out" in seq_output
    sleep_part = text.split('{\n  "command": "echo started; sleep 30"', 1)[1]
    assert "Result: ■ stopped by you" in sleep_part and "started" in sleep_part


async def wait_for_card(app: DeskApp, pilot: Pilot[DeskApp], command: str) -> ToolCard:
    def card() -> ToolCard | None:
        return next((c for c in app.controllers.tools.cards if command in c.arguments), None)

    await wait_until(pilot, card, what=f"the tool card of {command!r}")
    found = card()
    assert found is not None
    return found


async def test_a_resumed_session_exports_its_earlier_messages_and_tool_arguments(
    demo_server: DemoModelServer, tmp_path: Path
) -> None:
    provider = ProviderConfig(base_url=demo_server.base_url, model="demo")
    config = GatewayConfig(provider=provider, cwd=tmp_path, approvals=False)
    gateway = Gateway(config, store=SqliteStore(tmp_path / "desk.db"))
    try:
        session = gateway.session_create()
        log = EventLog()
        gateway.subscribe(log)
        for prompt in ("reply with exactly: first", shell_prompt("echo from-the-tool")):
            log.complete(gateway.prompt_submit(session, prompt).turn_id)
        for n in range(6):
            log.complete(gateway.prompt_submit(session, f"reply with exactly: later {n}").turn_id)
    finally:
        assert gateway.shutdown(timeout_s=5.0).threads_left == []

    gateway = Gateway(config, store=SqliteStore(tmp_path / "desk.db"))
    startup = Startup(resume=True, resume_id=session, recent_messages=4)
    app = DeskApp(gateway, connection(demo_server.base_url), handle_signals=False, startup=startup)
    app.controllers.export.wall_clock = lambda: WHEN
    target = tmp_path / "resumed.md"
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_until(pilot, lambda: app.view.earlier, what="the resumed transcript")
            await submit(pilot, f"/export {target}")
    finally:
        assert gateway.shutdown(timeout_s=5.0).threads_left == []
    text = target.read_text()
    assert text.startswith("# reply with exactly: first\n")
    assert text.index("first") < text.index("### Tool call: shell") < text.index("later 5")
    assert '"command": "echo from-the-tool"' in text
    assert "```\nfrom-the-tool" in text  # its result, as saved


async def test_export_into_a_folder_that_does_not_exist_is_refused_and_creates_none(
    app: DeskApp, tmp_path: Path
) -> None:
    missing = tmp_path / "nonexistent" / "dir"
    async with app.run_test(size=(100, 30)) as pilot:
        await submit(pilot, f"/export {missing}/x.md")
        errors = [str(n.content) for n in app.transcript.query(".note.-error")]
    assert errors == [f"✖ export failed: cannot write {missing}/x.md: there is no folder {missing}"]
    assert not (tmp_path / "nonexistent").exists()
