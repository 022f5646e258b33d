"""Pilot tests of the desk's keys: F1, Ctrl+C twice, Esc when idle, Ctrl+P, new lines, history."""

from __future__ import annotations

import threading

import pytest
from textual.command import CommandList, CommandPalette
from textual.pilot import Pilot

from agent.stops import Surface
from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.config import ConnectionInfo
from desk.screens.help_screen import HelpScreen
from desk.widgets import AssistantReply, PromptInput
from tests.desk.kit import submit_and_get_reply, wait_until
from tui_gateway.gateway import Gateway

pytestmark = pytest.mark.anyio


class FakeClock:
    """A clock the test moves by hand (seconds)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _app(gateway: Gateway, server: DemoModelServer, clock: FakeClock | None = None) -> DeskApp:
    info = ConnectionInfo("demo", server.base_url, is_demo=True, source="--demo")
    if clock is None:
        return DeskApp(gateway, info, handle_signals=False)
    return DeskApp(gateway, info, clock=clock, handle_signals=False)


def _messages(app: DeskApp) -> list[str]:
    return [n.message for n in app._notifications]


async def test_f1_opens_the_help_with_every_key_and_command(desk_app: DeskApp) -> None:
    async with desk_app.run_test(size=(100, 40)) as pilot:
        await pilot.press("f1")
        assert isinstance(desk_app.screen, HelpScreen)
        sections = dict(desk_app.screen.sections)
        keys = dict(sections["Keys"])
        for key in ("Esc", "Ctrl+C", "Ctrl+Q", "F1", "Ctrl+P", "PgUp", "PgDn"):
            assert key in keys, key
        assert "twice within 2 s" in keys["Ctrl+C"]
        prompt = dict(sections["In the prompt box"])
        assert {"Enter", "Ctrl+J", "Shift+Enter", "Up", "Down"} <= set(prompt)
        slash = dict(sections["Slash commands (typed in the prompt box)"])
        assert {"/theme [NAME]", "/export [PATH]"} <= set(slash)
        await pilot.press("f1")
        assert not isinstance(desk_app.screen, HelpScreen)
        await pilot.press("f1", "escape")  # Esc closes it too, and stops nothing
        assert not isinstance(desk_app.screen, HelpScreen)
        assert desk_app.is_running


async def test_page_down_scrolls_the_help_not_the_transcript_behind_it(
    desk_app: DeskApp,
) -> None:
    async with desk_app.run_test(size=(100, 20)) as pilot:
        await pilot.press("f1")
        assert isinstance(desk_app.screen, HelpScreen)
        box = desk_app.screen.query_one("#help-box")
        await wait_until(pilot, lambda: box.max_scroll_y > 0, what="a help taller than the box")
        await pilot.press("pagedown")
        await wait_until(pilot, lambda: box.scroll_y > 0, what="the help scrolled")
        await pilot.press("pageup")
        await wait_until(pilot, lambda: box.scroll_y == 0, what="back at its top")


async def test_esc_with_the_help_open_stops_the_turn_and_closes_the_help(
    gateway: Gateway, demo_server: DemoModelServer
) -> None:
    app = _app(gateway, demo_server)
    async with app.run_test(size=(100, 30)) as pilot:
        reply = await submit_and_get_reply(app, pilot, "Tell me about stopping streams")
        await wait_until(pilot, lambda: len(reply.text) > 10, what="streamed text")
        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")  # the help says "Esc / F1 closes", and Esc stops
        await wait_until(pilot, lambda: reply.outcome is not None, what="the turn's outcome")
        assert reply.outcome == "interrupted"
        assert not isinstance(app.screen, HelpScreen)
        await pilot.press("f1", "escape")  # nothing runs now: Esc only closes the help
        assert not isinstance(app.screen, HelpScreen)
        assert app.is_running


@pytest.mark.parametrize("key", ["escape", "ctrl+c"])
async def test_a_stop_from_the_terminal_closes_the_help_only_for_esc(
    gateway: Gateway, demo_server: DemoModelServer, key: str
) -> None:
    """In a terminal the input thread takes the stop key (it never reaches the help screen)."""
    app = _app(gateway, demo_server)
    results: list[bool] = []
    async with app.run_test(size=(100, 30)) as pilot:
        reply = await submit_and_get_reply(app, pilot, "Tell me about stopping streams")
        await wait_until(pilot, lambda: len(reply.text) > 10, what="streamed text")
        await pilot.press("f1")
        thread = threading.Thread(
            target=lambda: results.append(app.stop_from_input_thread(key)), name="fake-input"
        )
        thread.start()
        thread.join(5.0)
        await wait_until(pilot, lambda: reply.outcome is not None, what="the turn's outcome")
        await pilot.pause()
        assert results == [True]  # taken: the key stopped the turn
        assert isinstance(app.screen, HelpScreen) is (key != "escape")


async def test_ctrl_c_twice_within_2_s_quits(
    gateway: Gateway, demo_server: DemoModelServer
) -> None:
    clock = FakeClock()
    app = _app(gateway, demo_server, clock)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("ctrl+c")
        assert app.is_running
        # In the status bar, not a toast over the prompt box and the status bar.
        assert app.status_bar.turn_text() == "press Ctrl+C again to quit"
        assert "press Ctrl+C again to quit" not in _messages(app)
        assert app.query_one(PromptInput).region.height > 0
        clock.now += 1.9
        await pilot.press("ctrl+c")
        await wait_until(None, lambda: app.return_code is not None, what="the app to exit")
    assert app.return_code == 0


async def test_ctrl_c_again_after_2_s_only_asks_again(
    gateway: Gateway, demo_server: DemoModelServer
) -> None:
    clock = FakeClock()
    app = _app(gateway, demo_server, clock)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("ctrl+c")
        clock.now += 2.5
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert app.is_running and app.return_code is None
        assert app.status_bar.turn_text() == "press Ctrl+C again to quit"
        clock.now += 0.5  # within 2 s of the second press: that one counts as the first
        await pilot.press("ctrl+c")
        await wait_until(None, lambda: app.return_code is not None, what="the app to exit")


async def test_ctrl_c_with_text_in_the_box_empties_it_and_up_recalls_it(
    gateway: Gateway, demo_server: DemoModelServer
) -> None:
    clock = FakeClock()
    app = _app(gateway, demo_server, clock)
    async with app.run_test(size=(100, 30)) as pilot:
        box = app.query_one(PromptInput)
        await pilot.press(*"a long paste")
        await pilot.press("ctrl+c")
        await wait_until(pilot, lambda: box.text == "", what="the box emptied")
        assert (
            app.status_bar.turn_text() == "Ctrl+C emptied the prompt box: Up recalls what it held"
        )
        await pilot.press("up")
        assert box.text == "a long paste"
        await pilot.press("ctrl+c", "ctrl+c")  # emptied again: not yet a quit press
        assert app.is_running and box.text == ""
        await pilot.press("ctrl+c")  # the box is empty: the second press quits
        await wait_until(None, lambda: app.return_code is not None, what="the app to exit")


async def test_ctrl_c_right_after_enter_drops_nothing_the_enter_sent(
    gateway: Gateway, demo_server: DemoModelServer
) -> None:
    from textual import events

    app = _app(gateway, demo_server, FakeClock())
    async with app.run_test(size=(100, 30)) as pilot:
        box = app.query_one(PromptInput)
        box.text = "reply with exactly: sent"
        app.post_message(events.Key("enter", "\r"))  # read in one burst with the Ctrl+C
        app.post_message(events.Key("ctrl+c", None))
        await wait_until(pilot, lambda: app.transcript.reply_turn_ids, what="the prompt sent")
        assert box.text == "" and box.prompt_history.entries[-1:] == ["reply with exactly: sent"]


async def test_esc_with_nothing_running_is_harmless(desk_app: DeskApp) -> None:
    async with desk_app.run_test(size=(100, 30)) as pilot:
        box = desk_app.query_one(PromptInput)
        box.text = "half a thought"
        await pilot.press("escape", "escape")
        assert desk_app.is_running
        assert box.text == "half a thought"  # nothing typed is lost
        assert desk_app.focused is box
        assert not desk_app.transcript.query(AssistantReply)
        assert desk_app.status_bar.state == "idle"


def _palette_titles(app: DeskApp) -> list[str]:
    results = app.screen.query_one(CommandList)
    return [
        str(results.get_option_at_index(i).prompt).split("\n")[0]
        for i in range(results.option_count)
    ]


async def test_ctrl_p_lists_the_desk_commands_and_switches_theme(
    desk_app: DeskApp, config_home: object
) -> None:
    async with desk_app.run_test(size=(100, 40)) as pilot:
        await pilot.press("ctrl+p")
        assert isinstance(desk_app.screen, CommandPalette)
        await wait_until(pilot, lambda: "Export as Markdown" in _palette_titles(desk_app))
        titles = _palette_titles(desk_app)
        for title in ("Stop", "Export as Markdown", "Help", "Theme: dark", "Theme: light"):
            assert any(t.startswith(title) for t in titles), title
        assert "Theme: high-contrast" in " ".join(titles)
        assert "Toggle console" in titles  # the console panel (F2) exists in this desk

        await pilot.press(*"theme light")
        await wait_until(
            pilot, lambda: _palette_titles(desk_app)[:1] == ["Theme: light"], what="the match"
        )
        await pilot.press("enter")
        await wait_until(pilot, lambda: desk_app.theme == "light", what="the light theme")
    assert (desk_app.controllers.themes.config_path.read_text()) == 'theme = "light"\n'


async def palette_over_a_running_turn(
    app: DeskApp, pilot: Pilot[object], server: DemoModelServer
) -> AssistantReply:
    """A long reply streaming, and Ctrl+P: the command palette open over it; the reply."""
    server.configure(tokens_per_second=20.0, max_tokens=400)
    reply = await submit_and_get_reply(app, pilot, "a long one")
    await wait_until(pilot, lambda: app.running_turn == reply.turn_id, what="running")
    await pilot.press("ctrl+p")
    return reply


async def test_stop_from_the_palette_is_booked_as_a_command_not_a_key(
    desk_app: DeskApp, gateway: Gateway, demo_server: DemoModelServer
) -> None:
    async with desk_app.run_test(size=(100, 40)) as pilot:
        reply = await palette_over_a_running_turn(desk_app, pilot, demo_server)
        await pilot.press(*"stop")
        await wait_until(
            pilot, lambda: _palette_titles(desk_app)[:1] == ["Stop"], what="the Stop entry"
        )
        await pilot.press("enter")
        turn = gateway.turn(desk_app.session_id, reply.turn_id)
        assert turn.done.wait(10.0)
    assert turn.result is not None and turn.result.stop is not None
    assert turn.result.stop.surface is Surface.DESK_COMMAND
    assert turn.result.stop.reason == "stopped from the command palette"


async def test_ctrl_u_and_ctrl_k_delete_to_the_ends_of_a_long_wrapped_line(
    desk_app: DeskApp,
) -> None:
    # A long pasted line wraps over many rows: Ctrl+U cleared one row a press
    long_line = " ".join(f"word{n}" for n in range(300))
    async with desk_app.run_test(size=(60, 30)) as pilot:
        box = desk_app.query_one(PromptInput)
        box.text = f"first\n{long_line}"
        box.move_cursor(box.document.end)
        await pilot.press("ctrl+u")
        assert box.text == "first\n"
        await pilot.press("ctrl+u")  # at a line's start: joined to the line above
        assert box.text == "first"

        box.text = f"{long_line}\nlast"
        box.move_cursor((0, 5))
        await pilot.press("ctrl+k")
        assert box.text == "word0\nlast"
        await pilot.press("ctrl+k")  # at its end: the next line joins it
        assert box.text == "word0last"


async def test_shift_enter_and_ctrl_j_insert_new_lines(desk_app: DeskApp) -> None:
    async with desk_app.run_test(size=(100, 30)) as pilot:
        box = desk_app.query_one(PromptInput)
        await pilot.press("a", "shift+enter", "b", "ctrl+j", "c")
        assert box.text == "a\nb\nc"
        assert not desk_app.transcript.query(AssistantReply)  # nothing was sent


async def _send_and_finish(app: DeskApp, pilot: Pilot[object], text: str) -> None:
    reply = await submit_and_get_reply(app, pilot, text)
    await wait_until(pilot, lambda: reply.outcome is not None, what=f"the reply to {text!r}")


async def test_up_on_the_first_line_recalls_history_and_down_comes_back(
    desk_app: DeskApp,
) -> None:
    async with desk_app.run_test(size=(100, 30)) as pilot:
        await _send_and_finish(desk_app, pilot, "reply with exactly: one")
        await _send_and_finish(desk_app, pilot, "reply with exactly: two\nlines")
        box = desk_app.query_one(PromptInput)
        assert box.text == ""
        await pilot.press("d", "r", "a", "f", "t")
        await pilot.press("up")
        assert box.text == "reply with exactly: two\nlines"
        await pilot.press("up")  # the cursor is on the last line: Up moves it first
        assert box.text == "reply with exactly: two\nlines"
        await pilot.press("up")
        assert box.text == "reply with exactly: one"
        await pilot.press("down")
        assert box.text == "reply with exactly: two\nlines"
        await pilot.press("down")
        assert box.text == "draft"

        await pilot.press("up", "enter")  # a recalled prompt is sent as is
        await wait_until(
            pilot, lambda: len(desk_app.transcript.query(AssistantReply)) == 3, what="resend"
        )


async def test_esc_closes_the_palette_and_the_running_turn_goes_on(
    desk_app: DeskApp, gateway: Gateway, demo_server: DemoModelServer
) -> None:
    async with desk_app.run_test(size=(100, 40)) as pilot:
        reply = await palette_over_a_running_turn(desk_app, pilot, demo_server)
        assert isinstance(desk_app.screen, CommandPalette)
        await pilot.press("escape")
        await wait_until(
            pilot, lambda: not isinstance(desk_app.screen, CommandPalette), what="closed"
        )
        turn = gateway.turn(desk_app.session_id, reply.turn_id)
        assert not turn.done.is_set() and reply.outcome is None  # Esc was the palette's
        await pilot.press("escape")  # the palette closed: Esc stops again
        assert turn.done.wait(10.0)
    assert turn.result is not None and turn.result.stop is not None
    assert turn.result.stop.surface is Surface.DESK_KEY
