"""Pilot tests of the console panel (F2) and slash commands typed in the prompt box."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.provider.client import ProviderConfig
from agent.stops import Surface
from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.controllers.console import outcome_line, slash_command
from desk.widgets import AssistantReply
from desk.widgets.console_panel import ConsolePanel
from tests.desk.desk_testkit import connection, submit, submit_and_get_reply, wait_until
from tui_gateway.console.commands import COMMANDS
from tui_gateway.gateway import Gateway, GatewayConfig

pytestmark = pytest.mark.anyio


@pytest.fixture
def console_gateway(demo_server: DemoModelServer, tmp_path: Path) -> Iterator[Gateway]:
    (tmp_path / "notes.md").write_text("# Notes\n\nStops must really stop.\n", encoding="utf-8")
    provider = ProviderConfig(base_url=demo_server.base_url, model="demo")
    gateway = Gateway(GatewayConfig(provider=provider, cwd=tmp_path))
    try:
        yield gateway
    finally:
        assert gateway.shutdown(timeout_s=5.0).threads_left == []


@pytest.fixture
def app(console_gateway: Gateway, demo_server: DemoModelServer) -> DeskApp:
    return DeskApp(console_gateway, connection(demo_server.base_url), handle_signals=False)


def output(panel: ConsolePanel) -> str:
    return "\n".join(panel.output.lines)


async def type_in_console(pilot: object, line: str) -> None:
    """Set the console's command line (it has the focus) and press Enter."""
    app = pilot.app  # type: ignore[attr-defined]
    app.widgets.console_panel.input.value = line
    await pilot.press("enter")  # type: ignore[attr-defined]


def test_which_prompt_texts_are_console_commands() -> None:
    assert slash_command("/help", COMMANDS) == "help"
    assert slash_command("  /model qwen ", COMMANDS) == "model"
    assert slash_command("digest a.md b.md", COMMANDS) == "digest"
    assert slash_command("/digest a.md", COMMANDS) == "digest"
    prompt = "digest this text for me\nplease"
    assert slash_command(prompt, COMMANDS) is None  # a prompt, not a command
    assert slash_command("/theme dark", COMMANDS) is None  # someone else's command
    assert slash_command("help me", COMMANDS) is None
    assert slash_command("", COMMANDS) is None


def test_outcome_lines() -> None:
    assert outcome_line("ok", "", 0.25) == "✓ done in 0.2 s"
    assert outcome_line("cancelled", "stopped by the user", 1.0) == "■ cancelled · stopped by you"
    assert outcome_line("timeout", "stopped by the system: slow", 60.0).startswith("■ timeout")
    assert outcome_line("error", "usage: /model NAME", 0.0) == "✖ usage: /model NAME"


async def test_f2_opens_the_console_and_help_lists_the_commands(app: DeskApp) -> None:
    async with app.run_test(size=(120, 40)) as pilot:
        panel = app.widgets.console_panel
        assert not panel.is_open
        await pilot.press("f2")
        assert panel.is_open
        await wait_until(pilot, lambda: panel.input.has_focus, what="the console's focus")
        await type_in_console(pilot, "/help")
        await wait_until(pilot, lambda: "✓ done in" in output(panel), what="/help's outcome")
        text = output(panel)
        assert "› /help" in text and "digest PATH..." in text and "/model NAME" in text

        await pilot.press("up")  # history
        assert panel.input.value == "/help"
        await pilot.press("down")
        assert panel.input.value == ""

        await pilot.press("f2")
        assert not panel.is_open
        assert app.focused is app.query_one("#prompt")


async def test_a_digest_cancelled_with_the_cancel_button_closes_the_model_connection(
    app: DeskApp, demo_server: DemoModelServer
) -> None:
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("f2")
        panel = app.widgets.console_panel
        await wait_until(pilot, lambda: panel.input.has_focus, what="the console's focus")
        await type_in_console(pilot, "digest notes.md")
        await wait_until(pilot, lambda: "## notes.md" in output(panel), what="the digest start")
        await wait_until(pilot, lambda: len(output(panel)) > 80, what="streamed summary")
        assert app.controllers.console.running and not app.query_one("#console-cancel").disabled
        await pilot.click("#console-cancel")
        await wait_until(pilot, lambda: "■ cancelled" in output(panel), what="the cancel")

        assert "■ cancelled · stopped by you" in output(panel)
        assert app.controllers.console.running == ()
        assert app.query_one("#console-cancel").disabled
        record = demo_server.records.wait_for_record(
            lambda r: r.peer_closed_at is not None, timeout=2.0
        )
        assert record is not None  # the nested agent's request was closed, not left running


@pytest.mark.parametrize("tokens_per_second", [8.0])  # the turn outlasts the test
async def test_esc_in_the_console_cancels_its_command_not_the_turn(
    app: DeskApp, console_gateway: Gateway
) -> None:
    async with app.run_test(size=(120, 40)) as pilot:
        reply = await submit_and_get_reply(app, pilot, "Tell me about stopping streams")
        await wait_until(pilot, lambda: reply.text, what="the turn streaming")
        await pilot.press("f2")
        panel = app.widgets.console_panel
        await wait_until(pilot, lambda: panel.input.has_focus, what="the console's focus")
        await type_in_console(pilot, "digest notes.md")
        await wait_until(pilot, lambda: "## notes.md" in output(panel), what="the digest start")
        # The demo server has one slot: the digest waits behind the turn, so it is running
        # (blocked on the model) when Esc arrives. Esc goes to the console, not the turn.
        await pilot.press("escape")
        await wait_until(pilot, lambda: "■ cancelled" in output(panel), what="the cancel")
        assert reply.outcome is None and app.running_turn == reply.turn_id

        # With the focus back in the prompt box, Esc stops the turn again.
        await pilot.press("f2")
        await pilot.press("escape")
        await wait_until(pilot, lambda: reply.outcome is not None, what="the turn's stop")
        turn = console_gateway.turn(app.session_id, reply.turn_id)
        assert turn.result is not None and turn.result.exit_reason == "interrupted_by_user"


async def test_the_input_thread_offers_stop_keys_to_a_focused_console_first(
    app: DeskApp, console_gateway: Gateway
) -> None:
    results: list[bool] = []
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("f2")
        panel = app.widgets.console_panel
        await wait_until(pilot, lambda: panel.input.has_focus, what="the console's focus")
        await type_in_console(pilot, "digest notes.md")
        await wait_until(pilot, lambda: "## notes.md" in output(panel), what="the digest start")
        (command_id,) = app.controllers.console.running

        thread = threading.Thread(
            target=lambda: results.append(app.stop_from_input_thread("ctrl+c")), name="fake-input"
        )
        thread.start()
        thread.join(5.0)
        await wait_until(pilot, lambda: "■ cancelled" in output(panel), what="the cancel")

    assert results == [True]  # the key was consumed: it cancelled the command
    run = console_gateway.console.get(command_id)
    assert run is not None and run.stop is not None
    assert run.stop.surface is Surface.CONSOLE_CANCEL and run.stop.issuer == "user"


async def test_slash_commands_in_the_prompt_box_run_in_the_console(
    app: DeskApp, console_gateway: Gateway
) -> None:
    async with app.run_test(size=(120, 40)) as pilot:
        first_session = app.session_id
        await submit(pilot, "/help")
        panel = app.widgets.console_panel
        await wait_until(pilot, lambda: "✓ done in" in output(panel), what="/help's outcome")
        assert panel.is_open and app.query_one("#prompt").text == ""  # type: ignore[attr-defined]
        assert len(app.transcript.query(AssistantReply)) == 0  # nothing went to the model

        await submit(pilot, "/new")
        await wait_until(pilot, lambda: app.session_id != first_session, what="the switch")
        assert "new session " + app.session_id in output(panel)

        reply = await submit_and_get_reply(app, pilot, "Tell me about stopping streams")
        await wait_until(pilot, lambda: reply.text, what="the turn streaming")
        await submit(pilot, "/stop")
        await wait_until(pilot, lambda: reply.outcome is not None, what="the stop")
        turn = console_gateway.turn(app.session_id, reply.turn_id)
        assert turn.result is not None and turn.result.exit_reason == "interrupted_by_user"
