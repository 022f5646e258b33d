"""The key rule seen from the desk: a stop key stops what the session runs now, whatever the
screen still shows; a key read after quitting began does nothing; Enter empties the box in the
same key event, so what is typed next is the next prompt, whole.

The UI thread is held (the test's own code runs on it without awaiting) so the view cannot
catch up, and the stop key is pressed from another thread, as the terminal's input thread does.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator

import pytest

from agent.provider.client import ProviderConfig
from agent.stops import StopRequest, Surface
from contract.results import ShutdownReport
from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.config import ConnectionInfo
from desk.screens.desk_screen import EARLY_NOTICE, DeskScreen
from desk.widgets.prompt_input import PromptInput
from desk.widgets.session_view import SessionView
from tests.desk.kit import submit_and_get_reply, wait_until
from tui_gateway.gateway import Gateway, GatewayConfig

pytestmark = pytest.mark.anyio


def press_from_input_thread(app: DeskApp, key: str = "escape", **kwargs: float) -> bool:
    """``key`` offered on a thread of its own, as the terminal's input thread offers it."""
    results: list[bool] = []
    thread = threading.Thread(
        target=lambda: results.append(app.stop_from_input_thread(key, **kwargs)),
        name="fake-input",
    )
    thread.start()
    thread.join(5.0)
    assert results, "the press did not return"
    return results[0]


async def test_a_stop_key_stops_the_new_turn_while_the_screen_still_shows_the_last(
    desk_app: DeskApp, gateway: Gateway, demo_server: DemoModelServer
) -> None:
    async with desk_app.run_test(size=(120, 40)) as pilot:
        demo_server.configure(tokens_per_second=20.0, max_tokens=400)
        first = await submit_and_get_reply(desk_app, pilot, "one")
        session = desk_app.session_id
        await wait_until(pilot, lambda: desk_app.running_turn == first.turn_id, what="shown")
        # From here the UI thread is held: the view keeps showing the first turn running
        # while it ends (another frontend stops it) and the next one starts.
        end_elsewhere(gateway, session, first.turn_id)
        second = gateway.prompt_submit(session, "two", entered_at=time.monotonic())
        assert desk_app.running_turn == first.turn_id  # the screen is behind
        assert press_from_input_thread(desk_app, key_time=time.monotonic()) is True
        turn = gateway.turn(session, second.turn_id)
        assert turn.done.wait(10.0)
        await wait_until(pilot, lambda: desk_app.status_bar.state == "idle", what="idle")
    assert turn.result is not None and turn.result.exit_reason == "interrupted_by_user"
    assert turn.result.stop is not None and turn.result.stop.surface is Surface.DESK_KEY


async def test_the_stop_button_and_slash_stop_stop_what_runs_not_what_is_shown(
    desk_app: DeskApp, gateway: Gateway, demo_server: DemoModelServer
) -> None:
    async with desk_app.run_test(size=(120, 40)) as pilot:
        demo_server.configure(tokens_per_second=20.0, max_tokens=400)
        first = await submit_and_get_reply(desk_app, pilot, "one")
        session = desk_app.session_id
        await wait_until(pilot, lambda: desk_app.running_turn == first.turn_id, what="shown")
        view = desk_app.controllers.sessions.view
        assert view is not None
        end_elsewhere(gateway, session, first.turn_id)
        second = gateway.prompt_submit(session, "two")
        desk_app.controllers.turns.stop_by_command(view)  # /stop, the view still behind
        turn = gateway.turn(session, second.turn_id)
        assert turn.done.wait(10.0)
        await wait_until(pilot, lambda: desk_app.status_bar.state == "idle", what="idle")
    assert turn.result is not None and turn.result.exit_reason == "interrupted_by_user"
    assert turn.result.stop is not None and turn.result.stop.surface is Surface.DESK_COMMAND


def end_elsewhere(gateway: Gateway, session: str, turn_id: str) -> None:
    """Stop ``turn_id`` as an API client would, and wait for it to end."""
    gateway.session_interrupt(session, StopRequest.by_user(Surface.API_STOP), turn_id=turn_id)
    assert gateway.turn(session, turn_id).done.wait(10.0)


class GatedGateway(Gateway):
    """A gateway whose shutdown waits for :attr:`gate` (the quit has begun, nothing stopped
    yet)."""

    def __init__(self, config: GatewayConfig) -> None:
        super().__init__(config)
        self.gate = threading.Event()

    def shutdown(self, timeout_s: float | None = None) -> ShutdownReport:
        self.gate.wait(10.0)
        return super().shutdown(timeout_s)


@pytest.fixture
def gated(demo_server: DemoModelServer) -> Iterator[GatedGateway]:
    provider = ProviderConfig(base_url=demo_server.base_url, model="demo")
    gw = GatedGateway(GatewayConfig(provider=provider))
    try:
        yield gw
    finally:
        gw.gate.set()
        gw.shutdown(timeout_s=5.0)


async def test_a_key_read_after_quitting_began_does_nothing(
    gated: GatedGateway, demo_server: DemoModelServer
) -> None:
    info = ConnectionInfo("demo", demo_server.base_url, is_demo=True, source="--demo")
    app = DeskApp(gated, info, handle_signals=False)
    async with app.run_test(size=(120, 40)) as pilot:
        demo_server.configure(tokens_per_second=20.0, max_tokens=400)
        reply = await submit_and_get_reply(app, pilot, "a long one")
        session = app.session_id
        app.controllers.quit.begin()  # its shutdown waits at the gate
        assert press_from_input_thread(app, key_time=time.monotonic()) is True  # taken...
        assert press_from_input_thread(app, "ctrl+c", key_time=time.monotonic()) is True
        turn = gated.turn(session, reply.turn_id)
        assert turn.agent.stop_request is None  # ...and nothing was stopped by it
        gated.gate.set()
        assert turn.done.wait(10.0)
    assert turn.result is not None
    assert turn.result.exit_reason == "interrupted_by_system(gateway.shutdown)"


async def test_a_key_the_ui_handles_after_quitting_began_does_nothing(
    gated: GatedGateway, demo_server: DemoModelServer
) -> None:
    """The same, for a key that reaches the app's bindings (the UI thread's path)."""
    info = ConnectionInfo("demo", demo_server.base_url, is_demo=True, source="--demo")
    app = DeskApp(gated, info, handle_signals=False)
    async with app.run_test(size=(120, 40)) as pilot:
        demo_server.configure(tokens_per_second=20.0, max_tokens=400)
        reply = await submit_and_get_reply(app, pilot, "a long one")
        session = app.session_id
        app.controllers.quit.begin()  # its shutdown waits at the gate
        await pilot.press("escape")
        await pilot.press("ctrl+c")
        await pilot.pause()
        turn = gated.turn(session, reply.turn_id)
        assert turn.agent.stop_request is None  # nothing was stopped by them
        gated.gate.set()
        assert turn.done.wait(10.0)
    assert turn.result is not None
    assert turn.result.exit_reason == "interrupted_by_system(gateway.shutdown)"


async def test_keys_typed_after_enter_are_the_next_prompt_whole(
    desk_app: DeskApp, gateway: Gateway, demo_server: DemoModelServer
) -> None:
    """ "A20" Enter "B20" Enter typed faster than the UI handles the first submit: two prompts,
    in order, neither merged nor lost."""
    demo_server.configure(tokens_per_second=20.0, max_tokens=400)
    async with desk_app.run_test(size=(120, 40)) as pilot:
        box = desk_app.query_one(PromptInput)
        box.focus()
        await pilot.press(*"A20", "enter", *"B20", "enter", *"C2")
        session = desk_app.session_id

        def prompts() -> list[str]:
            with gateway._table.get(session).lock:  # noqa: SLF001
                return [t.prompt for t in gateway._table.get(session).turns.values()]  # noqa: SLF001

        await wait_until(pilot, lambda: len(prompts()) == 2, what="two prompts")
        assert prompts() == ["A20", "B20"]
        assert box.text == "C2"  # still being typed: the next prompt's start
        desk_app.controllers.turns.stop_by_command(desk_app.controllers.sessions.view)  # type: ignore[arg-type]


async def test_enter_empties_the_box_before_anything_else_runs(
    desk_app: DeskApp, gateway: Gateway, demo_server: DemoModelServer
) -> None:
    """The keys after Enter land in an empty box even while the submit is still in hand (its
    message not handled yet): the text went with the Enter."""
    demo_server.configure(tokens_per_second=20.0, max_tokens=400)
    async with desk_app.run_test(size=(120, 40)) as pilot:
        box = desk_app.query_one(PromptInput)
        box.focus()
        box.text = "first"
        box.action_submit(time.monotonic())  # the Enter's handling, no await after it
        assert box.text == ""
        box.insert("second")  # typed before the screen handled the submit
        await wait_until(pilot, lambda: desk_app.running_turn is not None, what="the turn")
        assert box.text == "second"
        (turn_id,) = [desk_app.running_turn]
        assert gateway.turn(desk_app.session_id, turn_id).prompt == "first"
        await pilot.press("escape")


class EnterWhileStartingApp(DeskApp):
    """Enter is pressed while the session's view is still being made (the desk starting)."""

    async def _mount_view(self, session_id: str) -> SessionView:
        box = self.widgets.prompt
        box.text = "reply with exactly: typed while starting"
        box.action_submit(time.monotonic())
        screen = self.screen_stack[0]
        assert isinstance(screen, DeskScreen)
        deadline = time.monotonic() + 10.0
        while self.widgets.status.notice != EARLY_NOTICE and time.monotonic() < deadline:
            await asyncio.sleep(0.01)  # the screen takes it while nothing shows a session
        return await super()._mount_view(session_id)


async def test_an_enter_while_the_desk_starts_sends_once_it_is_ready(
    gateway: Gateway, demo_server: DemoModelServer
) -> None:
    info = ConnectionInfo("demo", demo_server.base_url, is_demo=True, source="--demo")
    app = EnterWhileStartingApp(gateway, info, handle_signals=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.transcript.reply_turn_ids, what="the reply")
        (turn_id,) = app.transcript.reply_turn_ids
        assert gateway.turn(app.session_id, turn_id).prompt == (
            "reply with exactly: typed while starting"
        )
        assert app.widgets.prompt.text == ""
        assert app.widgets.status.notice == ""
