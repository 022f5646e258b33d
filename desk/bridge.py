"""The bridge from the gateway to the app: each gateway event becomes one Textual message,
posted to the view of its session.

The gateway calls :meth:`GatewayBridge._deliver` on a delivery thread of its own (deltas already
coalesced about every 30 ms). The bridge builds the message and hands it to ``post_message`` of
where it belongs, which is thread-safe and never blocks; it never uses ``call_from_thread``
(that would make the delivery thread wait for the UI). Events of the session on screen go to its
:class:`~desk.widgets.session_view.SessionView` (``view_for``), so that view's handlers only
ever see their own session; everything else (console events, the gateway stopping, events of
sessions not shown) goes to the app.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from textual.message_pump import MessagePump

from contract.events import (
    GatewayEvent,
    GatewayStopping,
    MessageComplete,
    MessageDelta,
    MessageStart,
    PromptDropped,
    PromptQueued,
    TurnState,
)
from contract.mcp_events import McpServerChanged
from contract.ports import DeskGateway
from contract.server_events import ServerStatus
from contract.subscription import Subscription
from desk.activity_messages import activity_message
from desk.agent_messages import agent_message
from desk.messages import (
    GatewayIsStopping,
    GatewayMessage,
    McpServerNotice,
    PromptWasDropped,
    PromptWasQueued,
    ReplyDelta,
    ServerStatusNotice,
    TurnCompleted,
    TurnStarted,
    TurnStateChanged,
)

ViewFor = Callable[[str], MessagePump | None]
"""The view showing a session now, or None (called on the delivery thread)."""


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
    if isinstance(payload, McpServerChanged):
        return McpServerNotice(sid, seq, payload)
    if isinstance(payload, ServerStatus):
        return ServerStatusNotice(sid, seq, payload)
    # tool, approval, console and session events; then steers and child agents
    return activity_message(event) or agent_message(event)


def _no_view(session_id: str) -> MessagePump | None:
    return None


class GatewayBridge:
    """Subscribes to a gateway and posts each event as a message to its session's view.

    Args:
        gateway: the gateway to listen to.
        target: the message pump (normally the app) that receives what no view takes.
        view_for: the view showing a session now (the default: none, ``target`` gets all).
    """

    def __init__(
        self, gateway: DeskGateway, target: MessagePump, view_for: ViewFor = _no_view
    ) -> None:
        self._gateway = gateway
        self._target = target
        self._view_for = view_for
        self._subscription: Subscription | None = None
        self._ended: deque[str] = deque(maxlen=64)
        self._running: dict[str, str] = {}  # session id -> turn whose start came, not its end
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

    def running_turn(self, session_id: str) -> str | None:
        """The turn of ``session_id`` whose ``message.start`` was posted and whose
        ``message.complete`` was not yet, if any (any thread)."""
        return self._running.get(session_id)

    def _deliver(self, event: GatewayEvent) -> None:
        message = to_message(event)
        if message is None:
            return
        payload, sid = event.payload, event.session_id
        if isinstance(payload, MessageStart):
            self._running[sid] = payload.turn_id
        elif isinstance(payload, MessageComplete):
            self._ended.append(payload.turn_id)
            if self._running.get(sid) == payload.turn_id:
                del self._running[sid]
        target = self._view_for(sid) if message.FOR_VIEW else None
        try:
            posted = (target or self._target).post_message(message)
        except RuntimeError:  # the app's event loop has closed: nobody is left to show it
            return
        if posted:
            self.posted += 1
