"""A reply, a tool's output, an approval, an error line and an export full of escape sequences
reach the screen with every control character made visible, through the real app under Pilot.

The screen is rendered as Textual would send it to the terminal (the compositor's strips) and
every segment's text is searched for ESC, C0 and C1 controls and bidi overrides.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.provider.client import ProviderConfig
from contract.events import MessageComplete, MessageDelta, MessageStart
from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.messages import GatewayMessage
from desk.widgets import AssistantReply, UserPrompt
from desk.widgets.approval_prompt import ApprovalPrompt
from desk.widgets.console_panel import ConsolePanel
from desk.widgets.session_item import SessionItem
from tests.desk.kit import answer_approval, connection, submit, submit_and_get_reply, wait_until
from tui_gateway.gateway import Gateway, GatewayConfig

pytestmark = pytest.mark.anyio

HOSTILE = (
    "\x1b]0;owned-title\x07"  # window title (OSC 0, BEL)
    "\x1b]2;owned\x1b\\"  # window title (OSC 2, ST)
    "\x1b[?1049l"  # leave the alternate screen
    "\x1b[?1000h\x1b[?1003h"  # mouse tracking on
    "\x1b[2J\x1b[H"  # clear the screen, cursor home
    "\x1bc"  # reset the terminal
    "\x9b2J\x9d0;c1-title\x9c"  # the same in one-character C1 form
    "\x1b]52;c;b3duZWQ=\x07"  # write the clipboard
    "\x1b]8;;http://evil.example\x1b\\click\x1b]8;;\x1b\\"  # a lying link
    "\x1bP1$r\x1b\\\x1b_apc\x1b\\"  # DCS, APC
    "\x7f\x00\x08\u202edesrever"  # DEL, NUL, backspace, a bidi override
    " hostile-end"
)
IN_A_FILE = HOSTILE.replace("\x00", "")  # read_file refuses a NUL byte as binary
FORBIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def screen_text(app: DeskApp) -> str:
    """Every segment of the screen as the compositor renders it for the terminal."""
    strips = app.screen._compositor.render_strips()
    return "\n".join("".join(segment.text for segment in strip) for strip in strips)


def assert_safe(text: str, where: str) -> None:
    found = FORBIDDEN.search(text)
    if found is not None:
        around = text[max(0, found.start() - 40) : found.end() + 40]
        raise AssertionError(f"{found.group()!r} reached {where}: ...{around!r}")


@pytest.fixture
def gateway(demo_server: DemoModelServer, tmp_path: Path) -> Iterator[Gateway]:
    (tmp_path / "hostile.txt").write_text(IN_A_FILE + "\nsecond line\n")
    provider = ProviderConfig(base_url=demo_server.base_url, model="demo")
    gateway = Gateway(GatewayConfig(provider=provider, cwd=tmp_path))
    try:
        yield gateway
    finally:
        assert gateway.shutdown(timeout_s=5.0).threads_left == []


async def test_replies_tool_output_errors_and_exports_never_send_a_control_character(
    gateway: Gateway, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    app = DeskApp(gateway, connection(demo_server.base_url), handle_signals=False)
    async with app.run_test(size=(120, 200)) as pilot:
        echoed = await submit_and_get_reply(app, pilot, "reply with exactly: " + HOSTILE)
        await wait_until(pilot, lambda: echoed.outcome is not None, what="the echoed reply")
        assert echoed.text == HOSTILE  # the reply keeps what the model said...

        read = json.dumps({"path": "hostile.txt"})  # inside the workspace: no approval
        quoted = await submit_and_get_reply(app, pilot, f"call tool read_file with {read}")
        await wait_until(pilot, lambda: app.running_turn is None, what="the tool turn")
        [card] = app.controllers.tools.cards
        assert card.result is not None and card.result.content.startswith(IN_A_FILE)
        card.expanded = True

        # A turn whose reasoning and whose server error line are hostile (scripted events).
        sid, turn = app.session_id, "hostile-failure"
        for message in (
            GatewayMessage(sid, 900, MessageStart(turn_id=turn, prompt="x")),
            GatewayMessage(sid, 901, MessageDelta(turn_id=turn, text="", reasoning=HOSTILE)),
            GatewayMessage(
                sid, 902, MessageComplete(turn, "failed", "failed(ServerError)", "", error=HOSTILE)
            ),
        ):
            app.view.post_message(message)
        await wait_until(
            pilot, lambda: (r := app.transcript.reply(turn)) and r.outcome, what="the failure"
        )
        await pilot.pause()

        # The session's title is its first prompt: the sidebar and the console list it.
        await pilot.press("ctrl+b")
        await wait_until(pilot, lambda: app.query(SessionItem), what="the sidebar")
        await pilot.press("f2")
        console = app.query_one(ConsolePanel)
        console.input.value = "sessions"
        await pilot.press("enter")
        await wait_until(pilot, lambda: "✓ done" in console.text, what="the listing")
        listed = "reply with exactly: ␛]0;owned"
        await wait_until(
            pilot, lambda: screen_text(app).count(listed) == 2, what="the listing on screen"
        )

        shown = screen_text(app)
        assert_safe(shown, "the screen")
        assert "␛]0;owned-title␇" in shown and "hostile-end" in shown  # ...shown, visibly
        assert shown.count(listed) == 2  # the sidebar, the console
        assert "<U+009B>2J" in shown and "<U+202E>desrever" in shown
        assert isinstance(quoted, AssistantReply)
        prompts = list(app.transcript.query(UserPrompt))
        assert prompts[0].text == "reply with exactly: " + HOSTILE

        target = tmp_path / "export.md"
        await submit(pilot, f"/export {target}")
        await wait_until(pilot, target.exists, what="the export")
        exported = target.read_text()
        assert_safe(exported, "the export")
        assert "␛[2J" in exported and "hostile-end" in exported
    history = gateway.history(app.session_id)
    assert history[0].content == "reply with exactly: " + HOSTILE  # the store keeps the original


async def test_an_approval_shows_a_hostile_command_and_a_resolved_path_safely(
    gateway: Gateway, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    app = DeskApp(gateway, connection(demo_server.base_url), handle_signals=False)
    command = json.dumps({"command": "printf '" + HOSTILE + "'"})  # JSON \u001b: a real ESC
    async with app.run_test(size=(120, 60)) as pilot:
        await submit(pilot, f"call tool shell with {command}")
        await wait_until(
            pilot, lambda: app.screen.query(ApprovalPrompt), timeout_s=30.0, what="the prompt"
        )
        await pilot.pause()
        shown = screen_text(app)
        assert_safe(shown, "the approval prompt")
        assert "Allow shell to run this command?" in shown and "␛[?1049l" in shown
        await answer_approval(pilot, app.screen.query_one(ApprovalPrompt), "n")
        await wait_until(pilot, lambda: app.running_turn is None, what="the denial")

        outside = tmp_path.parent / ("outside-\x1b[2J-" + tmp_path.name)
        outside.mkdir()
        link = tmp_path / "link"
        link.symlink_to(outside)
        await submit(pilot, "call tool list_dir with " + json.dumps({"path": "link"}))
        await wait_until(
            pilot,
            lambda: len(app.screen.query(ApprovalPrompt)) == 2,
            timeout_s=30.0,
            what="the second prompt",
        )
        await pilot.pause()
        prompt = app.screen.query(ApprovalPrompt).last()
        assert prompt.reason.startswith(f"list_dir on {outside}, outside the workspace")
        shown = screen_text(app)
        assert_safe(shown, "the approval prompt")
        assert f"outside-␛[2J-{tmp_path.name}" in shown
        await answer_approval(pilot, prompt, "n")
        await wait_until(pilot, lambda: app.running_turn is None, what="the denial")
