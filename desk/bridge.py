"""The bridge from the gateway to the app: each gateway event becomes one Textual message
(:class:`~desk.messages.GatewayMessage`, carrying the payload), posted to the view of its session.

The gateway calls :meth:`GatewayBridge._deliver` on a delivery thread of its own (deltas already
coalesced about every 30 ms). The bridge wraps the payload and hands it to ``post_message`` of
where it belongs, which is thread-safe and never blocks; it never uses ``call_from_thread``
(that would make the delivery thread wait for the UI). Events of the session on screen go to its
:class:`~desk.widgets.session_view.SessionView` (``view_for``), so that view's handlers only
ever see their own session; everything else (console events, the gateway stopping, events of
sessions not shown) goes to the app. Whoever gets it matches on the payload's type.

Deltas for a view go at the pace the UI paints them (:mod:`desk.stream_pace`): each is followed
by a ``call_after_refresh`` that times its round trip, and the subscription waits accordingly.

The bridge also keeps what each session's running turn (and each child agent that outlived its
turn) has shown so far (:mod:`desk.live_turns`), whichever session is on screen: a view made
when the desk switches to a session is handed it (:meth:`GatewayBridge.switch`), with no event
of that session delivered in between, so the view draws the turn (and the child) as it was and
goes on with the events that follow.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

from textual.message_pump import MessagePump

from agent.stamps import stamp
from contract.events import (
    ConsoleComplete,
    ConsoleOutput,
    GatewayEvent,
    GatewayStopping,
    MessageComplete,
    MessageDelta,
    MessageStart,
    Payload,
    SessionCreated,
)
from contract.mcp_events import McpServerChanged
from contract.ports import DeskGateway
from contract.server_events import ServerStatus
from contract.subscription import Subscription
from desk.live_turns import LiveSession, LiveTurns
from desk.messages import GatewayMessage
from desk.stream_pace import StreamPace

ViewFor = Callable[[str], MessagePump | None]
"""The view showing a session now, or None (called on the delivery thread)."""

TO_APP: frozenset[type[Payload]] = frozenset(
    {ConsoleOutput, ConsoleComplete, GatewayStopping, McpServerChanged, ServerStatus}
)
"""Payload types the app handles whatever session is shown (console, gateway-wide events)."""

NOT_SHOWN: frozenset[type[Payload]] = frozenset({SessionCreated})
"""Payload types nothing in the app shows: never posted."""


def _no_view(session_id: str) -> MessagePump | None:
    return None


class GatewayBridge:
    """Subscribes to a gateway and posts each event as a message to its session's view.

    Args:
        gateway: the gateway to listen to.
        target: the message pump (normally the app) that receives what no view takes.
        view_for: the view showing a session now (the default: none, ``target`` gets all).
        clock: the app's clock (seconds): when each event of a running turn was delivered.
    """

    def __init__(
        self,
        gateway: DeskGateway,
        target: MessagePump,
        view_for: ViewFor = _no_view,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._gateway = gateway
        self._target = target
        self._view_for = view_for
        self._clock = clock
        self._lock = threading.Lock()  # an event kept and posted, or a switch of view: one step
        self._live = LiveTurns()
        self._subscription: Subscription | None = None
        self._ended: deque[str] = deque(maxlen=64)
        self._running: dict[str, str] = {}  # session id -> turn whose start came, not its end
        self.posted = 0
        """Count of messages posted (read by tests)."""
        self.pace = StreamPace()
        """Round trips of the deltas posted to views, and the pace of deliveries they set."""

    def start(self) -> None:
        """Subscribe; events from now on reach ``target``. Call once the app is running."""
        if self._subscription is None:
            self._subscription = self._gateway.subscribe(self._deliver)
            self._subscription.pace_by(self.pace.gap)

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

    def switch(self, session_id: str, show: Callable[[], object]) -> LiveSession | None:
        """Call ``show``, which makes a new view of ``session_id`` the one ``view_for`` gives,
        with no event delivered meanwhile (UI thread; it waits at most for one event to be
        posted).

        Returns:
            the session's running turn, and its child agents that outlived their turn, as
            shown so far (None when none runs): each of their events was posted before the
            switch (to the old view, or the app), every later one goes to the new view.
        """
        with self._lock:
            show()
            return self._live.shown(session_id)

    def _deliver(self, event: GatewayEvent) -> None:
        with self._lock:
            self._deliver_kept(event)

    def _deliver_kept(self, event: GatewayEvent) -> None:
        payload, sid = event.payload, event.session_id
        kind = type(payload)
        if kind in NOT_SHOWN:
            return
        if sid:
            self._live.note(sid, event.seq, self._clock(), payload)
        if isinstance(payload, MessageStart):
            self._running[sid] = payload.turn_id
        elif isinstance(payload, MessageComplete):
            stamp("bridge.complete", payload.turn_id)
            self._ended.append(payload.turn_id)
            if self._running.get(sid) == payload.turn_id:
                del self._running[sid]
        target = None if kind in TO_APP else self._view_for(sid)
        paced = target is not None and kind is MessageDelta
        if paced:
            self.pace.posted()
        try:
            posted = (target or self._target).post_message(GatewayMessage(sid, event.seq, payload))
            if paced and posted and target is not None:
                target.call_after_refresh(self.pace.painted)
        except RuntimeError:  # the app's event loop has closed: nobody is left to show it
            return
        if posted:
            self.posted += 1
