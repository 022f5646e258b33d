"""Numbering a gateway's events and handing them to every subscriber, in order.

Two threads may publish for one session at once (a worker's deltas, a caller's ``prompt.queued``
or ``turn.state``): numbering and queueing happen under one lock, so every subscriber receives a
session's events in ``seq`` order. A *sticky* event (each MCP server's latest state) is kept
under its key and handed first to a subscriber that comes later, under the same lock.
:meth:`Subscription.publish` only appends to a deque, so publishing never waits on a subscriber.
"""

from __future__ import annotations

import threading

from tui_gateway.events import GatewayEvent, Payload
from tui_gateway.state import Session
from tui_gateway.subscription import EventCallback, Subscription


class EventHub:
    """The gateway's subscribers and its event numbering.

    Args:
        coalesce_s: seconds between two deliveries of deltas to a subscriber.
    """

    def __init__(self, coalesce_s: float) -> None:
        self._coalesce_s = coalesce_s
        self._lock = threading.Lock()  # the subscriber list and the gateway-wide seq
        self._publish_lock = threading.Lock()  # numbering + queueing an event, as one step
        self._subscriptions: list[Subscription] = []
        self._gateway_seq = 0
        self._sticky: dict[str, GatewayEvent] = {}

    def subscribe(self, callback: EventCallback) -> Subscription:
        """Deliver every event from now on to ``callback``, on a delivery thread of its own."""
        sub = Subscription(callback, coalesce_s=self._coalesce_s)
        with self._publish_lock:  # no event comes between the sticky ones and the first live one
            for event in self._sticky.values():
                sub.publish(event)
            with self._lock:
                self._subscriptions.append(sub)
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        """Stop delivering to ``sub`` and end its delivery thread."""
        with self._lock:
            if sub in self._subscriptions:
                self._subscriptions.remove(sub)
        sub.close()

    def publish(self, session: Session | None, payload: Payload, sticky: str = "") -> None:
        """Number ``payload`` in its session (or gateway-wide for None) and queue it for every
        subscriber; never blocks on a subscriber. Thread-safe.

        Args:
            session: the session, or None for a gateway-wide event.
            payload: the event's payload.
            sticky: a key under which the event is kept (replacing the one before) and given
                to every later subscriber first; "" keeps nothing.
        """
        with self._publish_lock:
            if session is None:
                with self._lock:
                    self._gateway_seq += 1
                    seq = self._gateway_seq
                session_id = ""
            else:
                with session.lock:
                    session.seq += 1
                    seq = session.seq
                session_id = session.session_id
            event = GatewayEvent(type=payload.TYPE, session_id=session_id, seq=seq, payload=payload)
            with self._lock:
                subs = list(self._subscriptions)
            for sub in subs:
                sub.publish(event)
            if sticky:
                self._sticky[sticky] = event

    def close(self) -> None:
        """Deliver what is queued to every subscriber, then end their delivery threads."""
        with self._lock:
            subs = list(self._subscriptions)
        for sub in subs:
            sub.close()
