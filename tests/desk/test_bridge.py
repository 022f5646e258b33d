"""The bridge: every gateway event the app shows becomes one posted message, in order."""

from __future__ import annotations

import threading

from textual.message import Message

from contract.events import (
    GatewayEvent,
    GatewayStopping,
    MessageComplete,
    MessageDelta,
    MessageStart,
    Payload,
    PromptDropped,
    PromptQueued,
    SessionCreated,
    TurnState,
)
from contract.subscription import Subscription
from desk.bridge import GatewayBridge, to_message
from desk.messages import (
    GatewayIsStopping,
    PromptWasDropped,
    PromptWasQueued,
    ReplyDelta,
    TurnCompleted,
    TurnStarted,
    TurnStateChanged,
)


def _event(payload: Payload, seq: int = 1) -> GatewayEvent:
    return GatewayEvent(type=payload.TYPE, session_id="s1", seq=seq, payload=payload)


def test_each_event_type_maps_to_its_message() -> None:
    cases: list[tuple[Payload, type[Message] | None]] = [
        (MessageStart("t", "hi"), TurnStarted),
        (MessageDelta("t", "x"), ReplyDelta),
        (TurnState("t", "streaming"), TurnStateChanged),
        (MessageComplete("t", "completed", "completed", "x"), TurnCompleted),
        (PromptQueued("t", "hi", 1), PromptWasQueued),
        (PromptDropped("t", "hi", "removed"), PromptWasDropped),
        (GatewayStopping(1, 10.0), GatewayIsStopping),
        (SessionCreated("", "demo"), None),
    ]
    for payload, expected in cases:
        message = to_message(_event(payload, seq=7))
        if expected is None:
            assert message is None
        else:
            assert type(message) is expected
            assert message.session_id == "s1" and message.seq == 7
            assert message.payload is payload  # type: ignore[attr-defined]


class _Target:
    """Stands in for the app: records what was posted and from which thread."""

    def __init__(self) -> None:
        self.posted: list[Message] = []
        self.threads: set[str] = set()
        self.done = threading.Event()

    def post_message(self, message: Message) -> bool:
        self.posted.append(message)
        self.threads.add(threading.current_thread().name)
        if isinstance(message, TurnCompleted):
            self.done.set()
        return True


class _Gateway:
    def __init__(self) -> None:
        self.subs: list[Subscription] = []

    def subscribe(self, callback):  # type: ignore[no-untyped-def]
        sub = Subscription(callback, coalesce_s=0.0)
        self.subs.append(sub)
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        self.subs.remove(sub)
        sub.close()


def test_bridge_posts_in_order_from_the_delivery_thread() -> None:
    gateway = _Gateway()
    target = _Target()
    bridge = GatewayBridge(gateway, target)  # type: ignore[arg-type]
    bridge.start()
    (sub,) = gateway.subs
    sub.publish(_event(MessageStart("t", "hi"), 1))
    sub.publish(_event(SessionCreated("", "demo"), 2))
    sub.publish(_event(MessageComplete("t", "completed", "completed", "x"), 3))
    assert target.done.wait(5.0)
    bridge.close()
    assert gateway.subs == []
    assert [type(m) for m in target.posted] == [TurnStarted, TurnCompleted]
    assert target.threads == {"desk-events"} and bridge.posted == 2
    bridge.close()  # idempotent


def test_a_turn_counts_as_ended_from_the_moment_its_completion_is_posted() -> None:
    gateway = _Gateway()
    target = _Target()
    ended_when_posted: list[bool] = []
    bridge = GatewayBridge(gateway, target)  # type: ignore[arg-type]
    post = target.post_message

    def spy(message: Message) -> bool:
        if isinstance(message, TurnCompleted):
            ended_when_posted.append(bridge.turn_ended("t"))
        return post(message)

    target.post_message = spy  # type: ignore[method-assign]
    bridge.start()
    (sub,) = gateway.subs
    sub.publish(_event(MessageDelta("t", "x"), 1))
    sub.publish(_event(MessageComplete("t", "completed", "completed", "x"), 2))
    assert target.done.wait(5.0)
    bridge.close()
    assert ended_when_posted == [True]  # a delta handled after this need not be drawn
    assert not bridge.turn_ended("other")
