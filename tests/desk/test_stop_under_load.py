"""The stop key never waits for the UI: the input thread asks the gateway what runs.

Issue: Esc during a fast stream was sometimes seconds late, or did nothing, because the input
thread only stopped a turn the UI had already recorded, and otherwise handed the key to the UI's
queue. These tests hold the UI thread (the view cannot have caught up) and press the key from
another thread, as the terminal's input thread does; a receipt counts from the key's read time.
"""

from __future__ import annotations

import threading
import time

import pytest

from agent.stops import Issuer, Surface
from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.stop_key import StopKey, StopPresses, key_stop
from tests.desk.kit import submit_and_get_reply, wait_until
from tui_gateway.gateway import Gateway

pytestmark = pytest.mark.anyio

LONG_PROMPT = "Tell me about stopping streams"


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


async def test_the_key_stops_a_turn_the_ui_has_not_shown_yet(
    desk_app: DeskApp, gateway: Gateway, demo_server: DemoModelServer
) -> None:
    async with desk_app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        session = desk_app.session_id
        # The prompt goes straight to the gateway and the key comes before this (UI) thread
        # returns to its loop: the view cannot know the turn.
        result = gateway.prompt_submit(session, LONG_PROMPT)
        assert desk_app.running_turn is None
        assert _press_from_another_thread(desk_app) is True  # consumed: it stopped the turn
        turn = gateway.turn(session, result.turn_id)
        assert turn.done.wait(10.0)
        await wait_until(pilot, lambda: desk_app.status_bar.state == "idle", what="idle")
    assert turn.result is not None and turn.result.exit_reason == "interrupted_by_user"
    assert turn.result.stop is not None and turn.result.stop.surface is Surface.DESK_KEY


async def test_the_receipt_counts_from_the_moment_the_key_was_read(
    desk_app: DeskApp, gateway: Gateway
) -> None:
    async with desk_app.run_test(size=(120, 40)) as pilot:
        reply = await submit_and_get_reply(desk_app, pilot, LONG_PROMPT)
        await wait_until(pilot, lambda: reply.text, what="streaming")
        read_at = time.monotonic() - 0.5  # the key was read half a second ago
        assert _press_from_another_thread(desk_app, read_at=read_at) is True
        await wait_until(pilot, lambda: reply.outcome is not None, what="the stop")
    turn = gateway.turn(desk_app.session_id, reply.turn_id)
    assert turn.result is not None and turn.result.stop is not None
    assert turn.result.stop.requested_at == read_at
    timings = turn.result.timings
    assert timings is not None and timings.stop_to_closed_ms is not None
    assert timings.stop_to_closed_ms >= 500.0
    closed = reply.note.split("connection closed in ")[1].split(" ms")[0]
    assert float(closed.replace(",", "")) >= 500.0


async def test_a_key_with_nothing_running_goes_on_and_stops_nothing(
    desk_app: DeskApp, gateway: Gateway
) -> None:
    async with desk_app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert _press_from_another_thread(desk_app) is False  # the key goes on to the app
        reply = await submit_and_get_reply(desk_app, pilot, "reply with exactly: fine")
        await wait_until(pilot, lambda: reply.outcome is not None, what="the reply")
    assert reply.outcome == "completed"  # the early key was not kept for a later Enter


async def test_a_key_right_after_enter_stops_the_prompt_that_enter_sent(
    desk_app: DeskApp, gateway: Gateway
) -> None:
    async with desk_app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        box = desk_app.widgets.prompt
        box.text = LONG_PROMPT
        enter_time = time.monotonic()
        # The input thread read Esc after the Enter, before the UI handled the Enter: nothing
        # ran yet in the gateway, so the stop waits for that Enter's prompt.
        assert _press_from_another_thread(desk_app, key_time=enter_time + 0.001) is False
        box.action_submit(enter_time)
        await wait_until(pilot, lambda: desk_app.transcript.reply_turn_ids, what="the reply")
        (turn_id,) = desk_app.transcript.reply_turn_ids
        turn = gateway.turn(desk_app.session_id, turn_id)
        assert turn.done.wait(10.0)
        await wait_until(pilot, lambda: desk_app.status_bar.state == "idle", what="idle")
    assert turn.result is not None and turn.result.exit_reason == "interrupted_by_user"


def test_a_key_stop_is_the_persons_and_carries_the_read_time() -> None:
    stop = key_stop(123.25)
    assert stop.issuer is Issuer.USER and stop.surface is Surface.DESK_KEY
    assert stop.requested_at == 123.25 and stop.hard


@pytest.mark.parametrize(
    ("text", "key", "double"),
    [("escape", "escape", False), ("ctrl+g", "ctrl+g", False), ("Escape escape", "escape", True)],
)
def test_stop_key_settings(text: str, key: str, double: bool) -> None:
    parsed = StopKey.parse(text)
    assert (parsed.key, parsed.double) == (key, double)
    assert parsed.keys == {key, "ctrl+c"}


@pytest.mark.parametrize("text", ["", "escape ctrl+g", "esc+", "a b c", "é"])
def test_bad_stop_keys_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="stop_key"):
        StopKey.parse(text)


def test_a_double_stop_key_stops_on_the_second_press_within_its_window() -> None:
    presses = StopPresses(StopKey("escape", double=True, window_s=0.5))
    assert presses.press("escape", 1.0) is False  # the first goes on as an ordinary key
    assert presses.press("escape", 1.3) is True
    assert presses.press("escape", 2.0) is False  # a new pair starts
    assert presses.press("escape", 2.6) is False  # too late: this one starts another pair
    assert presses.press("escape", 2.9) is True
    assert presses.press("ctrl+c", 5.0) is True  # Ctrl+C always stops at once
    assert presses.press("x", 5.0) is False
