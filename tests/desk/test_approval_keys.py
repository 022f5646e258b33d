"""Typing in the prompt box never answers an approval: only the card's own keys do (its y / a / n
once the focus is on it, its buttons, or, while Esc is not the stop key, an Alt chord at any
time), and what is typed in the prompt box stays there, words that begin with y, a or n
included. Over a real gateway and the demo model (which asks for a tool when the prompt says
``call tool NAME with {json}``)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual import events
from textual.binding import Binding

from agent.provider.client import ProviderConfig
from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.app_keys import APP_BINDINGS, bind_stop_key
from desk.approval_keys import (
    ANSWER_PAUSE_S,
    KEY_HINT,
    KEY_HINT_CHORDS,
    ApprovalKeys,
    chord_keys,
    chords_answer,
)
from desk.stop_key import StopKey
from desk.widgets import PromptInput
from desk.widgets.approval_prompt import ApprovalPrompt
from desk.widgets.queued_item import QueuedItem
from tests.desk.kit import answer_approval, connection, submit, wait_until
from tui_gateway.gateway import Gateway, GatewayConfig

pytestmark = pytest.mark.anyio


@pytest.fixture
def gateway(demo_server: DemoModelServer, tmp_path: Path) -> Iterator[Gateway]:
    provider = ProviderConfig(base_url=demo_server.base_url, model="demo")
    gateway = Gateway(GatewayConfig(provider=provider, cwd=tmp_path, approvals=True))
    try:
        yield gateway
    finally:
        assert gateway.shutdown(timeout_s=5.0).threads_left == []


@pytest.fixture
def app(gateway: Gateway, demo_server: DemoModelServer) -> DeskApp:
    return DeskApp(gateway, connection(demo_server.base_url), handle_signals=False)


def shell(command: str) -> str:
    return "call tool shell with " + json.dumps({"command": command})


async def shown_prompt(app: DeskApp, pilot: object) -> ApprovalPrompt:
    def found() -> ApprovalPrompt | None:
        return next(app.screen.query(ApprovalPrompt).results(ApprovalPrompt), None)

    await wait_until(pilot, found, timeout_s=30.0, what="the approval prompt")  # type: ignore[arg-type]
    prompt = found()
    assert prompt is not None
    return prompt


def typed_at(app: DeskApp, key: str, at: float) -> None:
    """A key press made at ``at`` (``time.monotonic()``), as the terminal driver posts it."""
    event = events.Key(key, key if len(key) == 1 else None)
    event.time = at
    app.post_message(event)


async def test_typing_while_an_approval_arrives_never_answers_it(app: DeskApp) -> None:
    async with app.run_test(size=(120, 40)) as pilot:
        box = app.query_one(PromptInput)
        await submit(pilot, shell("echo typed"))
        await pilot.press(*"then: ")  # the person goes on typing their next prompt
        prompt = await shown_prompt(app, pilot)
        await pilot.press(*"yna yes")
        assert prompt.waiting and prompt.answer is None
        assert box.text == "then: yna yes" and app.focused is box
        assert KEY_HINT in str(prompt.query_one(".keys").render())

        await answer_approval(pilot, prompt, "y")  # the card's own key, with the focus on it
        await wait_until(pilot, lambda: prompt.decision == "once", what="the answer")
        assert box.text == "then: yna yes"
        await wait_until(pilot, lambda: app.running_turn is None, what="the turn's end")


@pytest.mark.parametrize("words", ["no thanks, instead list the files", "yes", "a"])
async def test_words_typed_into_an_empty_box_after_a_pause_stay_in_the_box(
    words: str, app: DeskApp
) -> None:
    async with app.run_test(size=(120, 40)) as pilot:
        box = app.query_one(PromptInput)
        await submit(pilot, shell("echo asked"))
        prompt = await shown_prompt(app, pilot)
        ready = max(prompt.shown_at, time.monotonic()) + ANSWER_PAUSE_S + 0.05
        await wait_until(pilot, lambda: time.monotonic() > ready, what="a pause")
        assert box.text == "" and app.focused is box
        await pilot.press(*words)
        await pilot.pause()
        assert prompt.waiting and prompt.answer is None  # nothing answered it
        assert box.text == words and app.focused is box
        await pilot.press("shift+tab")  # to the card, on purpose: its own keys answer
        await wait_until(pilot, lambda: prompt.has_focus_within, what="the card focused")
        await pilot.press("n")
        await wait_until(pilot, lambda: prompt.decision == "deny", what="the denial")
        await wait_until(pilot, lambda: app.focused is box, what="the focus back in the box")
        assert box.text == words


async def test_keys_typed_before_the_card_appeared_are_typed_not_answers(app: DeskApp) -> None:
    async with app.run_test(size=(120, 40)) as pilot:
        box = app.query_one(PromptInput)
        await submit(pilot, shell("echo early"))
        prompt = await shown_prompt(app, pilot)
        ready = prompt.shown_at + ANSWER_PAUSE_S + 0.05
        await wait_until(pilot, lambda: time.monotonic() > ready, what="the card's age")
        # Made before the card appeared, read by the UI only now (it was busy).
        typed_at(app, "y", prompt.shown_at - 0.02)
        await wait_until(pilot, lambda: box.text == "y", what="the key typed")
        assert prompt.waiting
        await answer_approval(pilot, prompt, "n")
        await wait_until(pilot, lambda: prompt.decision == "deny", what="the denial")


async def test_shift_tab_goes_to_the_card_past_the_queued_prompts(app: DeskApp) -> None:
    # The queue's rows (✎, ✕) sit between the card and the box: Shift+Tab used to land on a
    # row's ✕, and the "y" pressed next was typed into the box.
    async with app.run_test(size=(120, 40)) as pilot:
        box = app.query_one(PromptInput)
        await submit(pilot, shell("echo queued behind"))
        await wait_until(pilot, lambda: box.busy, what="the turn to run")
        for text in ("first queued", "second queued"):
            await submit(pilot, text)
        await wait_until(pilot, lambda: app.query(QueuedItem), what="the queued rows")
        prompt = await shown_prompt(app, pilot)
        ready = max(prompt.shown_at, time.monotonic()) + ANSWER_PAUSE_S + 0.05
        await wait_until(pilot, lambda: time.monotonic() > ready, what="the card's age")
        assert app.focused is box
        await pilot.press("shift+tab")
        await wait_until(pilot, lambda: prompt.has_focus_within, what="the card focused")
        await pilot.press("y")
        await wait_until(pilot, lambda: prompt.decision == "once", what="the answer")
        assert box.text == ""
        await wait_until(pilot, lambda: app.focused is box, what="the focus back in the box")


def answer_actions(app: DeskApp) -> set[str]:
    """The Alt chords' actions the footer offers now."""
    actions = {b.binding.action for b in app.screen.active_bindings.values() if b.enabled}
    return {a for a in actions if a.startswith("answer_approval")}


async def test_while_esc_stops_no_alt_chord_answers_and_the_footer_offers_none(
    app: DeskApp,
) -> None:
    # A terminal sends Alt+y as ESC y: while Esc stops, that is Esc then y, never "allow once".
    async with app.run_test(size=(120, 40)) as pilot:
        box = app.query_one(PromptInput)
        await submit(pilot, shell("echo no chord"))
        prompt = await shown_prompt(app, pilot)
        assert str(prompt.query_one(".keys").render()) == KEY_HINT and "Alt" not in KEY_HINT
        assert answer_actions(app) == set()
        for chord in ("alt+y", "alt+a", "alt+n"):
            await pilot.press(chord)
        await pilot.pause()
        assert prompt.waiting and box.text == ""
        await answer_approval(pilot, prompt, "n")
        await wait_until(pilot, lambda: prompt.decision == "deny", what="the denial")


async def test_with_another_stop_key_an_alt_chord_answers_at_once_and_the_footer_offers_it(
    gateway: Gateway, demo_server: DemoModelServer
) -> None:
    stop_key = StopKey.parse("ctrl+g")
    app = DeskApp(
        gateway, connection(demo_server.base_url), handle_signals=False, stop_key=stop_key
    )
    async with app.run_test(size=(120, 40)) as pilot:
        box = app.query_one(PromptInput)
        await submit(pilot, shell("echo chord"))
        await pilot.press(*"draft")
        prompt = await shown_prompt(app, pilot)
        assert str(prompt.query_one(".keys").render()) == KEY_HINT_CHORDS
        assert "answer_approval('always')" in answer_actions(app)
        await pilot.press("alt+a")  # at once, with text in the box
        await wait_until(pilot, lambda: prompt.decision == "always", what="the answer")
        assert box.text == "draft" and app.focused is box
        await wait_until(pilot, lambda: app.running_turn is None, what="the turn's end")
        assert answer_actions(app) == set()


@pytest.mark.parametrize(
    ("setting", "chords"),
    [("escape", False), ("escape escape", False), ("ctrl+g", True), ("f9", True)],
)
def test_the_chords_answer_only_while_esc_is_not_the_stop_key(setting: str, chords: bool) -> None:
    stop_key = StopKey.parse(setting)
    assert chords_answer(stop_key.keys) is chords
    assert chord_keys(stop_key.keys) == (
        frozenset({"alt+y", "alt+a", "alt+n"}) if chords else set()
    )
    bindings = {b.key: [b] for b in APP_BINDINGS if isinstance(b, Binding)}
    bind_stop_key(bindings, stop_key)
    assert ("alt+y" in bindings) is chords


@pytest.mark.parametrize("key", ["y", "a", "n", "x", "alt+y", "alt+a", "alt+n"])
def test_while_esc_stops_no_key_in_the_prompt_box_answers(key: str) -> None:
    assert ApprovalKeys().answer(key) is None


@pytest.mark.parametrize(
    ("key", "answer"),
    [("alt+y", "once"), ("alt+a", "always"), ("alt+n", "deny"), ("y", None), ("n", None)],
)
def test_with_another_stop_key_only_a_chord_answers_from_the_prompt_box(
    key: str, answer: str | None
) -> None:
    assert ApprovalKeys(chords=True).answer(key) == answer
