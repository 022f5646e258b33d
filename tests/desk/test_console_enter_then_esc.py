"""Esc right after Enter in the console panel (F2) cancels the command that Enter started,
whichever the UI gets to first: the command's start (the panel's message, through the screen)
or the Esc (a key, at the app). With a turn running, that Esc is the console's: the turn goes
on. An Esc made before the Enter cancels nothing. Over a real gateway and the demo model; the
UI is held busy where the race needs it, as a long reply keeps it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from textual import events
from textual.pilot import Pilot

from agent.provider.client import ProviderConfig
from agent.stops import Surface
from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.widgets.console_entry import ConsoleEntry
from tests.desk.kit import connection, submit_and_get_reply, wait_until
from tui_gateway.gateway import Gateway, GatewayConfig

pytestmark = pytest.mark.anyio

CANCELLED = "■ cancelled · stopped by you"


@pytest.fixture
def tokens_per_second() -> float:
    return 8.0  # a digest (and a turn) outlasts the test


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


async def console_with(app: DeskApp, pilot: Pilot[object], line: str) -> None:
    """Open the console (focused) with ``line`` typed in its command line."""
    await pilot.press("f2")
    panel = app.widgets.console_panel
    await wait_until(pilot, lambda: panel.input.has_focus, what="the console's focus")
    panel.input.value = line


@asynccontextmanager
async def screen_busy(app: DeskApp) -> AsyncIterator[None]:
    """The main screen busy until the block ends: the panel's command waits in its queue
    while the keys reach the app (inside, wait with ``wait_until(None, ...)``)."""
    busy, release = asyncio.Event(), asyncio.Event()

    async def hold() -> None:
        busy.set()
        await release.wait()

    app.screen.post_message(events.Callback(callback=hold))
    await wait_until(None, busy.is_set, what="the screen busy")
    try:
        yield
    finally:
        release.set()


async def enter_then_esc(app: DeskApp) -> None:
    """Enter then Esc, as the terminal sends them (inside :func:`screen_busy`: Pilot's
    ``press`` waits for every widget, the busy screen too); return once the app has both."""
    seen = app._notes.keys_seen
    app.post_message(events.Key("enter", "\r"))
    app.post_message(events.Key("escape", None))
    await wait_until(None, lambda: app._notes.keys_seen >= seen + 2, what="both keys seen")


async def assert_cancelled_by_you(app: DeskApp, gateway: Gateway, pilot: Pilot[object]) -> None:
    panel = app.widgets.console_panel
    await wait_until(pilot, lambda: CANCELLED in panel.text, what="the command cancelled")
    console = app.controllers.console
    await wait_until(pilot, lambda: console.running == (), what="no command running")
    (entry,) = [e for e in panel.output.query(ConsoleEntry) if e.line == "digest notes.md"]
    command = gateway.console.get(entry.command_id)
    assert command is not None and command.stop is not None
    assert command.stop.surface is Surface.CONSOLE_CANCEL
    assert command.stop.issuer == "user"
    assert not console.busy


async def test_enter_then_esc_pressed_back_to_back_cancels_the_command(
    app: DeskApp, console_gateway: Gateway
) -> None:
    async with app.run_test(size=(120, 40)) as pilot:
        await console_with(app, pilot, "digest notes.md")
        await pilot.press("enter", "escape")
        await assert_cancelled_by_you(app, console_gateway, pilot)


async def test_enter_then_esc_cancel_the_command_when_the_esc_is_handled_first(
    app: DeskApp, console_gateway: Gateway
) -> None:
    async with app.run_test(size=(120, 40)) as pilot:
        await console_with(app, pilot, "digest notes.md")
        async with screen_busy(app):  # the command cannot start before the app has the Esc
            await enter_then_esc(app)
        await assert_cancelled_by_you(app, console_gateway, pilot)


async def test_enter_then_esc_in_the_console_cancel_its_command_not_the_turn(
    app: DeskApp, console_gateway: Gateway
) -> None:
    async with app.run_test(size=(120, 40)) as pilot:
        reply = await submit_and_get_reply(app, pilot, "Tell me about stopping streams")
        await wait_until(pilot, lambda: reply.text, what="the turn streaming")
        await console_with(app, pilot, "digest notes.md")
        async with screen_busy(app):  # the command cannot start before the app has the Esc
            await enter_then_esc(app)
        await assert_cancelled_by_you(app, console_gateway, pilot)
        assert reply.outcome is None and app.running_turn == reply.turn_id  # it goes on
        await pilot.press("f2")  # the prompt box: Esc stops the turn again
        await pilot.press("escape")
        await wait_until(pilot, lambda: reply.outcome is not None, what="the turn's stop")


async def test_an_esc_the_input_thread_read_with_the_enter_cancels_the_command(
    app: DeskApp, console_gateway: Gateway
) -> None:
    """In a terminal the input thread reads Esc before the app has seen the Enter before it."""
    async with app.run_test(size=(120, 40)) as pilot:
        await console_with(app, pilot, "digest notes.md")
        async with screen_busy(app):
            enter, esc = events.Key("enter", "\r"), events.Key("escape", None)
            seen = app._notes.keys_seen
            app.post_message(enter)
            assert app.stop_from_input_thread("escape", key_time=esc.time) is False  # nothing ran
            app.post_message(esc)  # so the key goes on to the app, after the Enter
            await wait_until(None, lambda: app._notes.keys_seen >= seen + 2, what="both keys")
        await assert_cancelled_by_you(app, console_gateway, pilot)


async def test_an_esc_before_the_enter_or_after_an_empty_one_cancels_nothing(
    app: DeskApp, console_gateway: Gateway
) -> None:
    async with app.run_test(size=(120, 40)) as pilot:
        await console_with(app, pilot, "")
        await pilot.press("enter", "escape")  # an empty line: nothing to cancel
        panel = app.widgets.console_panel
        panel.input.value = "/help"
        await pilot.press("escape", "enter")
        await wait_until(pilot, lambda: "✓ done in" in panel.text, what="/help's outcome")
        assert "■ cancelled" not in panel.text
        assert not app.controllers.console.busy
