"""Esc while an approval waits stops the turn, and what is typed after Esc is typed.

On a busy machine the terminal's input thread reads Esc and the keys typed after it at once:
it takes Esc as a stop right there (:mod:`desk.driver`), then posts the other keys to the app,
which may handle them before the gateway's ``approval.resolved`` reaches the screen. These
tests do exactly what the input thread does, in the same order (the stop, then the keys, with
their own times), while the session's view is busy (as drawing a long reply keeps it), so the
resolution waits in its queue until the keys were handled: a ``y`` or the ``a`` of "all good"
typed after Esc is neither "allow once" nor "allow always", the tool never runs, the stop is
the person's, and every letter lands in the prompt box, in order. Over a real gateway and the
demo model.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from textual import events

from agent.provider.client import ProviderConfig
from agent.stops import Surface
from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.approval_keys import ANSWER_PAUSE_S
from desk.widgets import PromptInput
from desk.widgets.approval_prompt import ApprovalPrompt
from desk.widgets.session_view import SessionView
from tests.desk.kit import connection, submit, wait_until
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


async def armed_prompt(app: DeskApp, pilot: object, marker: Path) -> ApprovalPrompt:
    """Ask for a shell call that would create ``marker``; return its card once a plain key
    could answer it (the pause since it appeared, and since the last key, passed)."""
    command = "call tool shell with " + json.dumps({"command": f"touch {marker}"})
    await submit(pilot, command)  # type: ignore[arg-type]

    def found() -> ApprovalPrompt | None:
        return next(app.screen.query(ApprovalPrompt).results(ApprovalPrompt), None)

    await wait_until(pilot, found, what="the approval prompt")  # type: ignore[arg-type]
    prompt = found()
    assert prompt is not None
    ready = max(prompt.shown_at, time.monotonic()) + ANSWER_PAUSE_S + 0.05
    await wait_until(pilot, lambda: time.monotonic() > ready, what="the card's age")  # type: ignore[arg-type]
    return prompt


@asynccontextmanager
async def view_busy(app: DeskApp) -> AsyncIterator[None]:
    """The session's view busy until the block ends: the gateway's events for it (the
    approval's resolution) wait in its queue. Pilot's pauses wait for every widget, so inside
    the block wait with ``wait_until(None, ...)``."""
    view = app.screen.query_one(SessionView)
    busy, release = asyncio.Event(), asyncio.Event()

    async def hold() -> None:
        busy.set()
        await release.wait()

    view.post_message(events.Callback(callback=hold))
    await wait_until(None, busy.is_set, what="the view busy")
    try:
        yield
    finally:
        release.set()


def esc_then_typed_in_one_read(app: DeskApp, typed: str) -> None:
    """What the input thread does with ESC and ``typed`` read at once: the stop key offered to
    the app first (taken as a stop, consumed), then each key posted with its own time. Nothing
    here waits, so the UI handles none of it before all of it is queued."""
    read_at = time.monotonic()
    assert app.stop_from_input_thread("escape", read_at, read_at)  # taken: a turn was stopped
    for n, char in enumerate(typed, 1):
        key = events.Key("space" if char == " " else char, char)
        key.time = read_at + n * 1e-6
        app.post_message(key)


async def typed_while_busy(app: DeskApp, typed: str) -> None:
    """Wait (inside :func:`view_busy`) until the prompt box holds ``typed``."""
    box = app.query_one(PromptInput)
    await wait_until(None, lambda: box.text == typed, timeout_s=5.0, what=f"{typed!r} typed")


async def assert_stopped_and_typed(
    app: DeskApp, gateway: Gateway, pilot: object, prompt: ApprovalPrompt, typed: str, marker: Path
) -> None:
    box = app.query_one(PromptInput)
    await wait_until(pilot, lambda: app.running_turn is None, what="the turn's end")  # type: ignore[arg-type]
    await wait_until(pilot, lambda: prompt.decision is not None, what="the resolution")  # type: ignore[arg-type]
    await wait_until(pilot, lambda: box.text == typed, what=f"{typed!r} in the box")  # type: ignore[arg-type]
    assert prompt.decision == "deny" and prompt.answer is None  # resolved by the stop
    turn = gateway.turn(app.session_id, prompt.request.turn_id)
    assert turn.result is not None and turn.result.exit_reason == "interrupted_by_user"
    assert turn.result.stop is not None and turn.result.stop.surface is Surface.DESK_KEY
    assert not marker.exists()  # the tool never ran
    assert app.focused is box


@pytest.mark.parametrize("typed", ["y", "all good"])
async def test_esc_and_words_in_one_read_stop_the_turn_and_type_the_words(
    app: DeskApp, gateway: Gateway, tmp_path: Path, typed: str
) -> None:
    # "y" alone once read as Alt+y (the call allowed); "a" of "all good" as "allow always"
    marker = tmp_path / "ran"
    async with app.run_test(size=(120, 40)) as pilot:
        prompt = await armed_prompt(app, pilot, marker)
        async with view_busy(app):
            esc_then_typed_in_one_read(app, typed)
            await typed_while_busy(app, typed)
        await assert_stopped_and_typed(app, gateway, pilot, prompt, typed, marker)


async def test_esc_while_the_card_has_the_focus_gives_the_keys_after_it_to_the_prompt_box(
    app: DeskApp, gateway: Gateway, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    async with app.run_test(size=(120, 40)) as pilot:
        prompt = await armed_prompt(app, pilot, marker)
        prompt.focus()  # the person moved the focus to the card on purpose (Shift+Tab)
        await wait_until(pilot, lambda: app.focused is prompt, what="the card focused")
        ready = time.monotonic() + ANSWER_PAUSE_S + 0.05
        await wait_until(pilot, lambda: time.monotonic() > ready, what="the card's keys armed")
        esc_then_typed_in_one_read(app, "all good")
        await assert_stopped_and_typed(app, gateway, pilot, prompt, "all good", marker)


async def test_the_stop_button_then_y_types_y(
    app: DeskApp, gateway: Gateway, tmp_path: Path
) -> None:
    # A click on Stop, then "y" a pause later while the screen has not yet heard the gateway
    # resolve the approval: the "y" is typed, it does not answer a card whose turn is stopped.
    marker = tmp_path / "ran"
    async with app.run_test(size=(120, 40)) as pilot:
        prompt = await armed_prompt(app, pilot, marker)
        async with view_busy(app):
            app.controllers.turns.stop(app.controllers.sessions.view, Surface.DESK_BUTTON)  # type: ignore[arg-type]
            key = events.Key("y", "y")
            key.time = time.monotonic()  # a pause after the last key (the Enter), as deliberate
            app.post_message(key)
            await typed_while_busy(app, "y")
        await wait_until(pilot, lambda: app.running_turn is None, what="the turn's end")
        assert prompt.decision == "deny" and prompt.answer is None
        assert not marker.exists()
