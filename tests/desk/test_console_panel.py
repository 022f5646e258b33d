"""Pilot tests of the console panel (F2) and slash commands typed in the prompt box."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual import events
from textual.app import App, ComposeResult

from agent.provider.client import ProviderConfig
from agent.stops import Surface
from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.controllers.console import outcome_line, slash_command
from desk.widgets import AssistantReply
from desk.widgets.console_panel import ConsolePanel
from tests.desk.kit import connection, submit, submit_and_get_reply, wait_until
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
    return panel.text


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
        assert "› /help" in text and "digest PATH..." in text and "/model [NAME]" in text
        assert "/server [URL]" in text

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


@pytest.mark.parametrize("tokens_per_second", [8.0])  # the digest outlasts the test
@pytest.mark.parametrize("through", ["app", "input thread"])
async def test_the_stop_key_cancels_a_digest_typed_in_the_prompt_box(
    through: str, app: DeskApp, console_gateway: Gateway, demo_server: DemoModelServer
) -> None:
    async with app.run_test(size=(120, 40)) as pilot:
        await submit(pilot, "digest notes.md")
        console = app.controllers.console
        await wait_until(pilot, lambda: bool(console.running), what="the digest running")
        (command_id,) = console.running
        await wait_until(
            pilot, lambda: demo_server.records.last() is not None, what="its model request"
        )
        assert app.focused is app.query_one("#prompt") and app.running_turn is None
        if through == "app":
            await pilot.press("escape")
        else:
            taken: list[bool] = []
            thread = threading.Thread(
                target=lambda: taken.append(app.stop_from_input_thread("escape")), name="input"
            )
            thread.start()
            thread.join(5.0)
            assert taken == [True]  # consumed: it cancelled the command
        await wait_until(pilot, lambda: console.running == (), what="the cancel")
        run = console_gateway.console.get(command_id)
        assert run is not None and run.stop is not None
        assert run.stop.surface is Surface.CONSOLE_CANCEL and run.stop.issuer == "user"
        record = demo_server.records.wait_for_record(
            lambda r: r.peer_closed_at is not None, timeout=2.0
        )
        assert record is not None  # the digest's model request was closed


@pytest.mark.parametrize("tokens_per_second", [8.0])  # the digest outlasts the test
@pytest.mark.parametrize("key", ["escape", "ctrl+c"])
async def test_a_stop_key_read_before_the_ui_took_the_digests_enter_cancels_it(
    key: str, app: DeskApp, console_gateway: Gateway, demo_server: DemoModelServer
) -> None:
    """In a terminal the input thread reads Esc before the UI handled the Enter before it: no
    command ran yet when the input thread looked, and the key still cancels the command."""
    async with app.run_test(size=(120, 40)) as pilot:
        box = app.query_one("#prompt")
        box.text = "digest notes.md"  # type: ignore[attr-defined]
        enter = events.Key("enter", "\r")
        app.post_message(enter)  # the driver posted the Enter; the UI has not handled it
        esc = events.Key(key, None)
        assert app.stop_from_input_thread(key, key_time=esc.time) is False  # nothing ran yet
        app.post_message(esc)  # so the key goes on to the app, after the Enter
        panel = app.widgets.console_panel
        await wait_until(
            pilot, lambda: "■ cancelled · stopped by you" in output(panel), what="the cancel"
        )
        assert app.controllers.console.running == ()


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
        assert turn.result.stop is not None and turn.result.stop.surface is Surface.DESK_COMMAND


LONG_SUMMARY = (
    "**Summary** of the notes: "
    + " ".join(f"stops-must-really-stop-{n}" for n in range(14))
    + " END-OF-THE-LONG-LINE"
)


def console_screen(app: DeskApp) -> str:
    """The rows of the screen the console panel covers, as the terminal would show them."""
    panel = app.widgets.console_panel
    region = panel.region
    strips = app.screen._compositor.render_strips()
    rows = strips[region.y : region.y + region.height]
    return "\n".join("".join(s.text for s in strip)[region.x : region.right] for strip in rows)


async def test_console_output_wraps_long_lines_and_renders_a_digest_as_markdown(
    app: DeskApp, tmp_path: Path
) -> None:
    (tmp_path / "long.md").write_text("reply with exactly: " + LONG_SUMMARY, encoding="utf-8")
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.press("f2")
        panel = app.widgets.console_panel
        await wait_until(pilot, lambda: panel.input.has_focus, what="the console's focus")
        await type_in_console(pilot, "digest long.md")
        await wait_until(pilot, lambda: "✓ done" in output(panel), what="the digest")
        await wait_until(
            pilot, lambda: "END-OF-THE-LONG-LINE" in console_screen(app), what="the line's end"
        )
        shown = console_screen(app)
    assert len(LONG_SUMMARY) > 2 * panel.size.width  # one line, far wider than the panel
    words = " ".join(shown.split())
    for n in range(14):  # every word of the long line is on screen: wrapped, not cut
        assert f"stops-must-really-stop-{n}" in words
    assert "Summary of the notes" in words and "**" not in shown  # Markdown, rendered
    assert "## long.md" not in shown and "long.md" in words  # the heading, rendered


async def test_one_line_answers_of_typed_commands_go_to_the_transcript(app: DeskApp) -> None:
    async with app.run_test(size=(120, 40)) as pilot:
        panel = app.widgets.console_panel
        await submit(pilot, "/model demo")
        await wait_until(pilot, lambda: notes(app), what="the answer in the transcript")
        assert notes(app)[-1] == "/model demo — this session now uses model demo (new sessions too)"
        assert not panel.is_open and app.focused is app.query_one("#prompt")

        await submit(pilot, "/model a b")
        await wait_until(pilot, lambda: len(notes(app)) == 2, what="the usage line")
        assert notes(app)[-1] == "/model a b — ✖ usage: /model NAME"
        assert not panel.is_open

        first = app.session_id
        await submit(pilot, "/new Plans")
        await wait_until(pilot, lambda: app.session_id != first, what="the switch")
        await wait_until(pilot, lambda: notes(app), what="the new session's line")
        assert notes(app) == [f"/new Plans — new session {app.session_id}"]
        assert not panel.is_open

        await submit(pilot, "/help")  # many lines: the console shows them
        await wait_until(pilot, lambda: panel.is_open, what="the console")
        await wait_until(pilot, lambda: "✓ done in" in output(panel), what="/help's outcome")
        assert app.focused is app.query_one("#prompt")  # typing goes on in the prompt box
        assert len(notes(app)) == 1
        assert "› /model demo" in output(panel)  # the console keeps every command


def notes(app: DeskApp) -> list[str]:
    return [str(n.render()) for n in app.transcript.query_children(".note")]


class PanelApp(App[None]):
    """The console panel alone, open."""

    def compose(self) -> ComposeResult:
        yield ConsolePanel(id="console")

    def on_mount(self) -> None:
        self.query_one(ConsolePanel).open()


async def test_plain_output_wraps_at_the_panel_width_and_keeps_two_commands_apart() -> None:
    app = PanelApp()
    long_line = " ".join(f"word{n:02}" for n in range(40)) + " LAST"
    async with app.run_test(size=(60, 50)) as pilot:
        panel = app.query_one(ConsolePanel)
        panel.begin("a", "/first")
        panel.begin("b", "/second")
        panel.write_to("a", long_line[:100])
        panel.write_to("b", "from b\n")
        panel.write_to("a", long_line[100:] + "\n")
        panel.finish("a", "✓ done in 0.1 s")
        panel.finish("b", "✓ done in 0.2 s")
        await wait_until(pilot, lambda: "LAST" in screen_of(app), what="the end of the line")
        words = " ".join(screen_of(app).split())
    assert all(f"word{n:02}" in words for n in range(40))
    first, second = words.index("› /first"), words.index("› /second")
    assert first < words.index("word00") < words.index("LAST") < second < words.index("from b")


def screen_of(app: App[None]) -> str:
    strips = app.screen._compositor.render_strips()
    return "\n".join("".join(segment.text for segment in strip) for strip in strips)


def burst(app: DeskApp, *keys: str) -> None:
    """Keys posted at once, as a terminal delivers a fast burst (Pilot waits between keys)."""
    for key in keys:
        app.post_message(events.Key(key, key if len(key) == 1 else None))


@pytest.mark.parametrize(
    ("keys", "line"),
    [
        (["backspace", "backspace", *"xyz"], "xyz"),
        (["left", *"xyz"], "ixyzj"),
        (["home", "delete", *"k"], "kj"),
        (["ctrl+w", *"go"], "go"),
    ],
    ids=["two_backspaces", "left", "home_delete", "ctrl_w"],
)
async def test_editing_keys_in_a_burst_of_typing_act_where_they_were_typed(
    app: DeskApp, keys: list[str], line: str
) -> None:
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("f2")
        field = app.widgets.console_panel.input
        await wait_until(pilot, lambda: field.has_focus, what="the console's focus")
        await pilot.press(*"ij")
        burst(app, *keys)
        await wait_until(pilot, lambda: field.value == line, what=f"{line!r} (is {field.value!r})")
        await pilot.pause()
        assert field.value == line
