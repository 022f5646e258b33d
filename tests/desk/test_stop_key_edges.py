"""The stop keys at their edges: a key made before an Enter, a key once quitting began, the
stream a key stopped, one key for two prompts in flight.

The terminal's input thread is played by a plain thread calling
:meth:`desk.app.DeskApp.stop_from_input_thread` while the UI thread waits for it (the view
cannot catch up meanwhile), as in ``test_stop_under_load.py``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from agent.provider.client import ProviderConfig
from agent.stops import Issuer, Surface
from contract.envelope import GatewayEvent
from contract.events import MessageComplete
from contract.results import ShutdownReport
from contract.subscription import EventCallback, Subscription
from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.config import ConnectionInfo
from desk.stop_key import StopKey
from tests.desk.kit import submit_and_get_reply, wait_until
from tests.desk.test_stop_key_setting import press_made_at
from tui_gateway.gateway import Gateway, GatewayConfig

pytestmark = pytest.mark.anyio

LONG_PROMPT = "Tell me about stopping streams"


@pytest.fixture
def tokens_per_second() -> float:
    """Slow enough that the long reply is still streaming when the keys come."""
    return 8.0


def _press_from_another_thread(app: DeskApp, key: str = "escape", **kwargs: float) -> bool:
    results: list[bool] = []
    thread = threading.Thread(
        target=lambda: results.append(app.stop_from_input_thread(key, **kwargs)),
        name="fake-input",
    )
    thread.start()
    thread.join(5.0)
    assert results, "the press did not return"
    return results[0]


async def test_a_key_made_before_an_enter_never_stops_that_enter_s_prompt(
    desk_app: DeskApp, gateway: Gateway
) -> None:
    async with desk_app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        key_time = time.monotonic() - 0.5
        # Esc, then Enter, half a second ago: the input thread reads the key only now.
        assert _press_from_another_thread(desk_app, key_time=key_time) is False
        box = desk_app.widgets.prompt
        box.text = "reply with exactly: kept"
        box.action_submit(key_time + 0.001)
        await wait_until(pilot, lambda: desk_app.transcript.reply_turn_ids, what="the reply")
        (turn_id,) = desk_app.transcript.reply_turn_ids
        turn = gateway.turn(desk_app.session_id, turn_id)
        assert turn.done.wait(10.0)
        await wait_until(pilot, lambda: desk_app.status_bar.state == "idle", what="idle")
    assert turn.result is not None and turn.result.exit_reason == "completed"


class HeldEnds(Gateway):
    """A gateway whose turns' ends reach its subscribers once the test lets them go."""

    def __init__(self, config: GatewayConfig) -> None:
        super().__init__(config)
        self.release = threading.Event()

    def subscribe(self, callback: EventCallback) -> Subscription:
        def held(event: GatewayEvent) -> None:
            if isinstance(event.payload, MessageComplete):
                self.release.wait(10.0)
            callback(event)

        return super().subscribe(held)


async def test_what_the_stream_still_has_queued_is_not_drawn_once_the_key_stopped_it(
    demo_server: DemoModelServer,
) -> None:
    gateway = HeldEnds(
        GatewayConfig(provider=ProviderConfig(base_url=demo_server.base_url, model="demo"))
    )
    app = DeskApp(gateway, ConnectionInfo("demo", demo_server.base_url), handle_signals=False)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            reply = await submit_and_get_reply(app, pilot, LONG_PROMPT)
            await wait_until(pilot, lambda: reply.text, what="streaming")
            turns = app.controllers.turns
            assert turns.drawn(reply.turn_id)
            assert _press_from_another_thread(app) is True
            # its end has not reached the desk: the stop alone says not to draw its backlog
            assert not turns.drawn(reply.turn_id)
            gateway.release.set()
            await wait_until(pilot, lambda: reply.outcome is not None, what="the stop")
        assert reply.outcome == "interrupted"
    finally:
        gateway.release.set()
        assert gateway.shutdown(timeout_s=5.0).threads_left == []


class HeldShutdown(Gateway):
    """A gateway whose shutdown waits until the test lets it go (quitting began, nothing
    stopped yet)."""

    def __init__(self, config: GatewayConfig) -> None:
        super().__init__(config)
        self.asked = threading.Event()
        self.release = threading.Event()

    def shutdown(self, timeout_s: float | None = None) -> ShutdownReport:
        self.asked.set()
        self.release.wait(10.0)
        return super().shutdown(timeout_s)


@pytest.fixture
def held(demo_server: DemoModelServer) -> Iterator[HeldShutdown]:
    gw = HeldShutdown(
        GatewayConfig(provider=ProviderConfig(base_url=demo_server.base_url, model="demo"))
    )
    try:
        yield gw
    finally:
        gw.release.set()
        assert gw.shutdown(timeout_s=5.0).threads_left == []


@pytest.mark.parametrize("thread", ["input", "ui"])
async def test_a_stop_key_once_quitting_began_leaves_the_stop_to_the_quit(
    held: HeldShutdown, demo_server: DemoModelServer, thread: str
) -> None:
    app = DeskApp(held, ConnectionInfo("demo", demo_server.base_url), handle_signals=False)
    async with app.run_test(size=(120, 40)) as pilot:
        reply = await submit_and_get_reply(app, pilot, LONG_PROMPT)
        await wait_until(pilot, lambda: reply.text, what="streaming")
        turn_id, session_id = reply.turn_id, app.session_id
        await pilot.press("ctrl+q")
        await wait_until(pilot, held.asked.is_set, what="the quit to begin")
        if thread == "input":
            assert _press_from_another_thread(app) is True  # taken, and it does nothing
        else:
            await pilot.press("escape")
        assert held.turn(session_id, turn_id).result is None  # still running
        held.release.set()
        await wait_until(None, lambda: app.return_code is not None, what="the app to exit")
    result = held.turn(session_id, turn_id).result
    assert result is not None and result.stop is not None
    assert (result.stop.issuer, result.stop.surface) == (Issuer.SYSTEM, Surface.GATEWAY_SHUTDOWN)


async def test_a_double_stop_key_read_by_the_input_thread_stops_on_its_second_press(
    gateway: Gateway, demo_server: DemoModelServer
) -> None:
    app = DeskApp(
        gateway,
        ConnectionInfo("demo", demo_server.base_url),
        handle_signals=False,
        stop_key=StopKey.parse("escape escape"),
    )
    async with app.run_test(size=(120, 40)) as pilot:
        reply = await submit_and_get_reply(app, pilot, LONG_PROMPT)
        await wait_until(pilot, lambda: reply.text, what="streaming")
        first = time.monotonic()
        assert _press_from_another_thread(app, read_at=first) is False  # goes on, stops nothing
        assert gateway.turn(app.session_id, reply.turn_id).result is None
        assert _press_from_another_thread(app, read_at=first + 0.1) is True
        await wait_until(pilot, lambda: reply.outcome is not None, what="the stop")
    assert reply.outcome == "interrupted"


async def test_one_key_the_input_thread_kept_stops_one_of_two_prompts_in_flight(
    desk_app: DeskApp, gateway: Gateway
) -> None:
    async with desk_app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        box = desk_app.widgets.prompt
        entered = time.monotonic()
        keyed = entered + 0.002
        # "one" Enter, "two" Enter, Esc, read at once: the input thread gets the key before
        # the UI sent either prompt, so the gateway keeps it for the prompt entered before it.
        assert _press_from_another_thread(desk_app, key_time=keyed) is False
        box.text = LONG_PROMPT
        box.action_submit(entered)
        box.text = LONG_PROMPT + " again"
        box.action_submit(entered + 0.001)
        await press_made_at(pilot, "escape", keyed)  # the UI handles the key it let through
        await wait_until(
            pilot, lambda: len(desk_app.transcript.reply_turn_ids) == 2, what="both replies"
        )
        one, two = (
            gateway.turn(desk_app.session_id, t) for t in desk_app.transcript.reply_turn_ids
        )
        assert one.done.wait(10.0)
        assert one.result is not None and one.result.exit_reason == "interrupted_by_user"
        await wait_until(pilot, lambda: desk_app.status_bar.state != "idle", what="two runs")
        assert two.agent.stop_request is None  # one key, one prompt stopped
