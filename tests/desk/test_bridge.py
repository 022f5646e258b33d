"""The bridge: every gateway event the app shows becomes one posted message, in order."""

from __future__ import annotations

import threading

from textual.message import Message

from contract.events import (
    CompressionProgressed,
    ConsoleOutput,
    GatewayEvent,
    GatewayStopping,
    MessageComplete,
    MessageDelta,
    MessageStart,
    Payload,
    PromptQueued,
    SessionCreated,
    ToolOutput,
    TurnState,
)
from contract.subscription import Subscription
from desk.bridge import GatewayBridge
from desk.messages import GatewayMessage


def _event(payload: Payload, seq: int = 1, session_id: str = "s1") -> GatewayEvent:
    return GatewayEvent(type=payload.TYPE, session_id=session_id, seq=seq, payload=payload)


def _message(payload: Payload, session_id: str = "s1") -> GatewayMessage:
    return GatewayMessage(session_id, 1, payload)


def test_a_backlog_coalesces_by_payload_type_and_control_events_never() -> None:
    first, later = _message(MessageDelta("t", "Hel")), _message(MessageDelta("t", "lo"))
    assert first.can_replace(later)
    assert isinstance(later.payload, MessageDelta) and later.payload.text == "Hello"
    output = _message(ToolOutput("t", "c1", "a\n"))
    more = _message(ToolOutput("t", "c1", "b\n"))
    assert output.can_replace(more) and isinstance(more.payload, ToolOutput)
    assert more.payload.text == "a\nb\n"
    step, newer = (_message(CompressionProgressed("t", "summarize", tokens_out=n)) for n in (1, 2))
    assert step.can_replace(newer) and newer.payload == CompressionProgressed(
        "t", "summarize", tokens_out=2
    )
    kept = [
        (MessageDelta("t", "x"), MessageDelta("other turn", "y")),  # another turn's
        (MessageDelta("t", "x"), MessageComplete("t", "completed", "completed", "x")),
        (ToolOutput("t", "c1", "x"), ConsoleOutput("k1", "x")),
        (CompressionProgressed("t", "prepare"), CompressionProgressed("t", "summarize")),
        (TurnState("t", "streaming"), TurnState("t", "stopping")),  # control: never joined
        (PromptQueued("t", "a", 1), PromptQueued("t", "a", 1)),
    ]
    for before, after in kept:
        queued = _message(after)
        assert not _message(before).can_replace(queued), (before, after)
        assert queued.payload is after
    other_session = _message(MessageDelta("t", "y"), session_id="s2")
    assert not _message(MessageDelta("t", "x")).can_replace(other_session)


class _Target:
    """Stands in for the app: records what was posted and from which thread."""

    def __init__(self) -> None:
        self.posted: list[Message] = []
        self.threads: set[str] = set()
        self.done = threading.Event()

    def post_message(self, message: Message) -> bool:
        self.posted.append(message)
        self.threads.add(threading.current_thread().name)
        if isinstance(message, GatewayMessage) and isinstance(message.payload, MessageComplete):
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
    posted = [m for m in target.posted if isinstance(m, GatewayMessage)]
    assert len(posted) == len(target.posted)
    assert [(type(m.payload), m.session_id, m.seq) for m in posted] == [
        (MessageStart, "s1", 1),
        (MessageComplete, "s1", 3),
    ]  # session.created is shown nowhere: not posted
    assert target.threads == {"desk-events"} and bridge.posted == 2
    bridge.close()  # idempotent


def test_a_turn_counts_as_ended_from_the_moment_its_completion_is_posted() -> None:
    gateway = _Gateway()
    target = _Target()
    ended_when_posted: list[bool] = []
    bridge = GatewayBridge(gateway, target)  # type: ignore[arg-type]
    post = target.post_message

    def spy(message: Message) -> bool:
        if isinstance(message, GatewayMessage) and isinstance(message.payload, MessageComplete):
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


class _View(_Target):
    """Stands in for the view of session ``s1``."""


def test_events_go_to_the_view_of_their_session_and_gateway_wide_ones_to_the_app() -> None:
    gateway = _Gateway()
    app, view = _Target(), _View()
    bridge = GatewayBridge(gateway, app, lambda sid: view if sid == "s1" else None)  # type: ignore[arg-type]
    bridge.start()
    (sub,) = gateway.subs
    sub.publish(_event(MessageStart("t", "hi"), 1))
    sub.publish(_event(ConsoleOutput("k1", "ls"), 2))
    sub.publish(_event(GatewayStopping(1, 10.0), 3, session_id=""))
    sub.publish(_event(MessageStart("u", "other"), 1, session_id="s2"))
    sub.publish(_event(MessageComplete("t", "completed", "completed", "x"), 4))
    assert view.done.wait(5.0)
    bridge.close()
    assert [m.payload for m in view.posted] == [  # type: ignore[attr-defined]
        MessageStart("t", "hi"),
        MessageComplete("t", "completed", "completed", "x"),
    ]
    assert [type(m.payload) for m in app.posted] == [  # type: ignore[attr-defined]
        ConsoleOutput,
        GatewayStopping,
        MessageStart,
    ]
    assert bridge.running_turn("s2") == "u" and bridge.running_turn("s1") is None
