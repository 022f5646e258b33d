"""The bridge from the gateway to the app: each gateway event becomes one Textual message.

The gateway calls :meth:`GatewayBridge._deliver` on a delivery thread of its own (deltas already
coalesced about every 30 ms). The bridge only builds a message and hands it to
``target.post_message``, which is thread-safe and never blocks; it never uses
``call_from_thread`` (that would make the delivery thread wait for the UI).
"""

from __future__ import annotations

from collections import deque

from textual.message_pump import MessagePump

from desk.activity_messages import activity_message
from desk.messages import (
    GatewayIsStopping,
    GatewayMessage,
    PromptWasDropped,
    PromptWasQueued,
    ReplyDelta,
    TurnCompleted,
    TurnStarted,
    TurnStateChanged,
)
from desk.ports import DeskGateway
from tui_gateway.events import (
    GatewayEvent,
    GatewayStopping,
    MessageComplete,
    MessageDelta,
    MessageStart,
    PromptDropped,
    PromptQueued,
    TurnState,
)
from tui_gateway.subscription import Subscription


def to_message(event: GatewayEvent) -> GatewayMessage | None:
    """The Textual message for a gateway event.

    Args:
        event: any gateway event.

    Returns:
        the message, or None for event types the app does not show (``session.created``).
    """
    payload = event.payload
    sid, seq = event.session_id, event.seq
    if isinstance(payload, MessageDelta):
        return ReplyDelta(sid, seq, payload)
    if isinstance(payload, MessageStart):
        return TurnStarted(sid, seq, payload)
    if isinstance(payload, TurnState):
        return TurnStateChanged(sid, seq, payload)
    if isinstance(payload, MessageComplete):
        return TurnCompleted(sid, seq, payload)
    if isinstance(payload, PromptQueued):
        return PromptWasQueued(sid, seq, payload)
    if isinstance(payload, PromptDropped):
        return PromptWasDropped(sid, seq, payload)
    if isinstance(payload, GatewayStopping):
        return GatewayIsStopping(sid, seq, payload)
    return activity_message(event)  # tool, approval, console and session events


class GatewayBridge:
    """Subscribes to a gateway and posts each event to ``target`` as a message.

    Args:
        gateway: the gateway to listen to.
        target: the message pump (normally the app) that receives the messages.
    """

    def __init__(self, gateway: DeskGateway, target: MessagePump) -> None:
        self._gateway = gateway
        self._target = target
        self._subscription: Subscription | None = None
        self._ended: deque[str] = deque(maxlen=64)
        self.posted = 0
        """Count of messages posted (read by tests)."""

    def start(self) -> None:
        """Subscribe; events from now on reach ``target``. Call once the app is running."""
        if self._subscription is None:
            self._subscription = self._gateway.subscribe(self._deliver)

    def close(self) -> None:
        """Unsubscribe (idempotent)."""
        subscription, self._subscription = self._subscription, None
        if subscription is not None:
            self._gateway.unsubscribe(subscription)

    def turn_ended(self, turn_id: str) -> bool:
        """True once the turn's ``message.complete`` was posted (any thread).

        The app reads it while handling a delta: a delta queued ahead of its turn's completion
        need not be drawn, since the completion shows the canonical text right after.
        """
        return turn_id in self._ended

    def _deliver(self, event: GatewayEvent) -> None:
        message = to_message(event)
        if message is None:
            return
        if isinstance(event.payload, MessageComplete):
            self._ended.append(event.payload.turn_id)
        try:
            posted = self._target.post_message(message)
        except RuntimeError:  # the app's event loop has closed: nobody is left to show it
            return
        if posted:
            self.posted += 1
