"""Deltas reach the UI at the pace it paints them; control events never wait for that pace."""

from __future__ import annotations

import threading

from pytest import approx

from contract.events import GatewayEvent, MessageComplete, MessageDelta, Payload
from contract.subscription import Subscription
from desk.stream_pace import IN_FLIGHT_STEP_S, MAX_GAP_S, ROUND_TRIPS, StreamPace


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _event(payload: Payload, seq: int) -> GatewayEvent:
    return GatewayEvent(type=payload.TYPE, session_id="s1", seq=seq, payload=payload)


def test_the_gap_follows_the_last_round_trip_and_waits_for_a_frame_in_flight() -> None:
    clock = _Clock()
    pace = StreamPace(clock)
    assert pace.gap() == 0.0  # nothing measured yet: the subscription's own coalescing
    pace.posted()
    clock.now += 0.004
    pace.posted()  # a second delta before the frame: the clock runs from the first
    clock.now += 0.036
    assert pace.gap() == approx(0.040 + IN_FLIGHT_STEP_S)  # still waiting for its frame
    pace.painted()
    assert pace.round_trip_s == approx(0.040)
    assert pace.gap() == approx(ROUND_TRIPS * 0.040)
    pace.painted()  # a frame with nothing in flight measures nothing
    assert pace.round_trip_s == approx(0.040)
    pace.posted()
    clock.now += 3.0  # a frame that never came (the view hidden): bounded
    assert pace.gap() == MAX_GAP_S
    pace.painted()
    assert pace.gap() == MAX_GAP_S


def test_the_subscriber_pace_holds_deltas_but_never_a_control_event() -> None:
    delivered: list[GatewayEvent] = []
    got_first, asked_again = threading.Event(), threading.Event()
    calls = 0

    def gap() -> float:
        nonlocal calls
        calls += 1
        if calls >= 2:
            asked_again.set()
        return 3600.0  # an hour: only a control event can end this wait

    def deliver(event: GatewayEvent) -> None:
        delivered.append(event)
        got_first.set()

    sub = Subscription(deliver, coalesce_s=0.0, name="desk-test-events")
    sub.pace_by(gap)
    sub.publish(_event(MessageDelta("t", "Hel"), 1))
    assert got_first.wait(10)  # the first delta goes at once: no delivery to space from
    sub.publish(_event(MessageDelta("t", "lo"), 2))
    sub.publish(_event(MessageDelta("t", " there"), 3))
    assert asked_again.wait(10)  # the delivery thread asked the pace and waits
    assert [e.seq for e in delivered] == [1]  # held: the pace said an hour
    sub.publish(_event(MessageComplete("t", "completed", "completed", "Hello there"), 4))
    assert sub.close(10)
    texts = [e.payload.text for e in delivered if isinstance(e.payload, MessageDelta)]
    assert texts == ["Hel", "lo there"]  # the held deltas merged, then the completion
    assert [e.seq for e in delivered][-1] == 4


def test_a_pace_that_fails_falls_back_to_plain_coalescing() -> None:
    delivered: list[GatewayEvent] = []
    done = threading.Event()

    def gap() -> float:
        raise RuntimeError("the view went away")

    def deliver(event: GatewayEvent) -> None:
        delivered.append(event)
        if event.seq == 3:
            done.set()

    sub = Subscription(deliver, coalesce_s=0.0, name="desk-test-events")
    sub.pace_by(gap)
    for seq in (1, 2, 3):
        sub.publish(_event(MessageDelta("t", str(seq)), seq))
    assert done.wait(10)  # deltas only: nothing but the pace could have released them
    assert sub.close(10)
    assert "".join(e.payload.text for e in delivered if isinstance(e.payload, MessageDelta)) == (
        "123"
    )
