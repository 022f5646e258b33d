"""Typing never answers an approval: only a deliberate key does (a plain y / a / n after a pause
with the prompt box empty, or, while Esc is not the stop key, an Alt chord at any time), and the
keys typed meanwhile stay in the prompt box. Over a real gateway and the demo model (which asks
for a tool when the prompt says ``call tool NAME with {json}``)."""

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

        box.text = ""
        ready = max(prompt.shown_at, time.monotonic()) + ANSWER_PAUSE_S + 0.05
        await wait_until(pilot, lambda: time.monotonic() > ready, what="a pause")
        await pilot.press("y")  # deliberate now: after a pause, with an empty box
        await wait_until(pilot, lambda: prompt.decision == "once", what="the answer")
        assert box.text == ""
        await wait_until(pilot, lambda: app.running_turn is None, what="the turn's end")


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
        box.text = ""
        # Made in the flow of typing: 100 ms after the key before it.
        now = time.monotonic()
        typed_at(app, "x", now)
        typed_at(app, "n", now + 0.1)
        await wait_until(pilot, lambda: box.text == "xn", what="both keys typed")
        assert prompt.waiting
        box.text = ""
        last = now + 0.1  # the "n" above: the answer's pause counts from it
        await wait_until(pilot, lambda: time.monotonic() > last, what="the last key's time")
        await answer_approval(pilot, prompt, "n")
        await wait_until(pilot, lambda: prompt.decision == "deny", what="the denial")


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


@pytest.mark.parametrize(
    ("key", "at", "box_empty", "before", "answer"),
    [
        ("y", 10.5, True, [], "once"),  # a pause after the card, nothing typed since
        ("n", 10.5, True, [10.0], "deny"),  # the key before it came 0.5 s earlier
        ("y", 10.2, True, [], None),  # too soon after the card appeared
        ("y", 9.9, True, [], None),  # made before the card appeared
        ("a", 10.5, True, [10.4], None),  # in the flow of typing
        ("y", 10.5, False, [], None),  # the box holds text: it is typed there
        ("x", 10.5, True, [], None),  # not an answer key
        ("alt+y", 10.01, False, [10.0], None),  # a chord: never while Esc stops
        ("alt+n", 10.5, True, [], None),
    ],
)
def test_which_key_presses_answer(
    key: str, at: float, box_empty: bool, before: list[float], answer: str | None
) -> None:
    keys = ApprovalKeys()
    for t in before:
        keys.key_arrived(t)
    keys.key_arrived(at)
    keys.key_arrived(at + 0.05)  # a later key the UI has not handled yet counts for nothing
    assert keys.answer(key, at, shown_at=10.0, box_empty=box_empty) == answer


@pytest.mark.parametrize(
    ("key", "at", "answer"),
    [("alt+y", 10.01, "once"), ("alt+a", 10.01, "always"), ("alt+n", 9.0, "deny")],
)
def test_with_another_stop_key_a_chord_answers_at_any_time(
    key: str, at: float, answer: str
) -> None:
    keys = ApprovalKeys(chords=True)
    keys.key_arrived(at - 0.01)
    keys.key_arrived(at)
    assert keys.answer(key, at, shown_at=10.0, box_empty=False) == answer
