"""The prompt box keeps the keyboard: Tab with nothing to complete does nothing, a click in the
transcript does not take the typing away, and printable keys typed while something that takes
no text has the focus still reach the prompt box."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual import events
from textual.keys import _character_to_key

from agent.provider.client import ProviderConfig
from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.widgets import PromptInput
from tests.desk.kit import connection, submit, submit_and_get_reply, wait_until
from tui_gateway.gateway import Gateway, GatewayConfig

pytestmark = pytest.mark.anyio


@pytest.fixture
def tool_app(demo_server: DemoModelServer, tmp_path: Path) -> Iterator[DeskApp]:
    provider = ProviderConfig(base_url=demo_server.base_url, model="demo")
    gateway = Gateway(GatewayConfig(provider=provider, cwd=tmp_path, approvals=False))
    try:
        yield DeskApp(gateway, connection(demo_server.base_url), handle_signals=False)
    finally:
        assert gateway.shutdown(timeout_s=5.0).threads_left == []


def box(app: DeskApp) -> PromptInput:
    return app.query_one(PromptInput)


def footer_actions(app: DeskApp) -> set[str]:
    return {b.binding.action for b in app.screen.active_bindings.values() if b.enabled}


@pytest.mark.parametrize("tokens_per_second", [8.0])  # the turn runs while the test types
async def test_tab_with_nothing_to_complete_keeps_the_typing(desk_app: DeskApp) -> None:
    async with desk_app.run_test(size=(100, 30)) as pilot:
        reply = await submit_and_get_reply(desk_app, pilot, "Tell me about stopping streams")
        await wait_until(pilot, lambda: reply.text, what="streaming")  # Stop is enabled now
        await pilot.press(*"hello", "tab", *" world")
        assert box(desk_app).text == "hello world"
        assert desk_app.focused is box(desk_app)
        assert "busy_queue" in footer_actions(desk_app)  # the footer still says Enter queues
        await pilot.press("escape")


async def test_a_click_in_the_transcript_does_not_take_the_typing(tool_app: DeskApp) -> None:
    async with tool_app.run_test(size=(100, 30)) as pilot:
        await submit(pilot, "call tool shell with " + json.dumps({"command": "echo hi"}))
        await wait_until(pilot, lambda: tool_app.controllers.tools.cards, what="the card")
        (card,) = tool_app.controllers.tools.cards
        await wait_until(pilot, lambda: tool_app.running_turn is None, what="the turn's end")
        await pilot.press(*"hello")
        await pilot.click(card)
        await pilot.click(tool_app.transcript, offset=(5, 1))
        assert tool_app.focused is box(tool_app)  # Enter still sends, not folds the card
        await pilot.press(*" world")
        assert box(tool_app).text == "hello world"
        assert tool_app.focused is box(tool_app)
        assert card.expanded  # the click did what a click on a card does


async def test_printable_keys_go_to_the_prompt_box_from_a_control_that_takes_no_text(
    tool_app: DeskApp,
) -> None:
    async with tool_app.run_test(size=(100, 30)) as pilot:
        await submit(pilot, "call tool shell with " + json.dumps({"command": "echo hi"}))
        await wait_until(pilot, lambda: tool_app.controllers.tools.cards, what="the card")
        (card,) = tool_app.controllers.tools.cards
        await wait_until(pilot, lambda: card.done, what="the result")
        await pilot.press(*"hello")
        card.focus()  # moved there on purpose (Shift+Tab): its own keys work
        await pilot.press("enter")
        assert card.expanded
        await pilot.press(*" world")  # but it takes no text: the typing goes on in the box
        assert box(tool_app).text == "hello world"
        assert tool_app.focused is box(tool_app)


async def test_the_cursor_line_of_a_long_paste_stays_in_sight(desk_app: DeskApp) -> None:
    async with desk_app.run_test(size=(100, 30)) as pilot:
        prompt = box(desk_app)
        prompt.focus()
        desk_app.post_message(events.Paste("\n".join(f"line {n}" for n in range(1, 16))))
        await wait_until(pilot, lambda: "line 15" in prompt.text, what="the paste")
        await pilot.pause()
        row = desk_app.query_one("#input-row")
        cursor_y = prompt.cursor_screen_offset.y
        assert row.content_region.y <= cursor_y < row.content_region.bottom
        assert prompt.region.bottom <= row.content_region.bottom  # no line of the box cut off


async def test_a_paste_shows_its_control_characters_as_the_transcript_does(
    desk_app: DeskApp,
) -> None:
    async with desk_app.run_test(size=(100, 30)) as pilot:
        prompt = box(desk_app)
        prompt.focus()
        await pilot.press("x")  # typed first: the paste goes after it
        desk_app.post_message(events.Paste("A\x07B\u202eC\x1b[2JD"))  # as the driver does
        await wait_until(pilot, lambda: "D" in prompt.text, what="the paste")
        assert prompt.text == "xA␇B<U+202E>C␛[2JD"


def burst(app: DeskApp, *keys: str) -> None:
    """Keys posted at once, as a terminal delivers a fast burst (Pilot waits between keys)."""
    for key in keys:
        app.post_message(events.Key(key, key if len(key) == 1 else None))


@pytest.mark.parametrize(
    ("keys", "text"),
    [
        (["backspace", "backspace", *"xyz"], "xyz"),
        (["left", *"xyz"], "ixyzj"),
        (["backspace", *"xyz"], "ixyz"),
        (["ctrl+u", *"hello"], "hello"),
        (["home", "delete", *"k"], "kj"),
    ],
    ids=["two_backspaces", "left", "backspace", "ctrl_u", "home_delete"],
)
async def test_editing_keys_in_a_burst_of_typing_act_where_they_were_typed(
    tool_app: DeskApp, keys: list[str], text: str
) -> None:
    async with tool_app.run_test(size=(100, 30)) as pilot:
        prompt = box(tool_app)
        prompt.focus()
        await pilot.press(*"ij")
        burst(tool_app, *keys)
        await wait_until(pilot, lambda: prompt.text == text, what=f"{text!r} (is {prompt.text!r})")
        await pilot.pause()
        assert prompt.text == text


async def test_typed_joiners_and_no_break_spaces_stay_in_the_prompt(tool_app: DeskApp) -> None:
    # Python calls none of these printable; Textual's field dropped them when typed
    typed = "zw\u200cnj a\u00a0b \U0001f468\u200d\U0001f469\u200d\U0001f467 \u200fx\ufeffy"
    async with tool_app.run_test(size=(100, 30)) as pilot:
        for char in typed + "\u202e":  # as the terminal's parser makes them (Pilot.press
            # loses the character of most of these keys)
            tool_app.post_message(events.Key(_character_to_key(char), char))
        await pilot.pause()
        assert box(tool_app).text == typed + "<U+202E>"  # a bidi override shown, as pasted
