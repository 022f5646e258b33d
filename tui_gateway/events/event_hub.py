"""Numbering a gateway's events and handing them to every subscriber, in order.

Two threads may publish for one session at once (a worker's deltas, a caller's ``prompt.queued``
or ``turn.state``): numbering and queueing happen under one lock, so every subscriber receives a
session's events in ``seq`` order. A *sticky* event (each MCP server's latest state) is kept
under its key and handed first to a subscriber that comes later, under the same lock.
:meth:`Subscription.publish` only appends to a deque, so publishing never waits on a subscriber.

On a store several hosts share, the numbers come from the database in blocks and every event is
kept there too (:class:`~tui_gateway.events.shared_events.SharedEvents`), so a client resumes its
stream on any host.
"""

from __future__ import annotations

import threading

from agent.store import StoredReplay, StoreError
from contract.events import GatewayEvent, Payload
from contract.subscription import EventCallback, Subscription
from tui_gateway.events.shared_events import BLOCK, SharedEvents
from tui_gateway.sessions.state import Session


class EventHub:
    """The gateway's subscribers and its event numbering.

    Args:
        coalesce_s: seconds between two deliveries of deltas to a subscriber.
        shared: numbers and journal of a store several hosts share, or None.
    """

    def __init__(self, coalesce_s: float, shared: SharedEvents | None = None) -> None:
        self._coalesce_s = coalesce_s
        self._shared = shared
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
                if self._shared is not None:
                    self._number_from_store(session, self._shared)
                with session.lock:
                    session.seq += 1
                    seq = session.seq
                session_id = session.session_id
            event = GatewayEvent(type=payload.TYPE, session_id=session_id, seq=seq, payload=payload)
            if self._shared is not None:
                self._shared.keep(event)
            with self._lock:
                subs = list(self._subscriptions)
            for sub in subs:
                sub.publish(event)
            if sticky:
                self._sticky[sticky] = event

    @staticmethod
    def _number_from_store(session: Session, shared: SharedEvents) -> None:
        """Reserve the session's next block of numbers when its block is used up (called with
        the publish lock held, so one block at a time; the session's lock is not held while
        the store is asked)."""
        with session.lock:
            if session.seq < session.seq_limit:
                return
        base = shared.next_block(session.session_id)
        with session.lock:
            if base is not None:
                session.seq = max(session.seq, base)
            session.seq_limit = session.seq + BLOCK

    def flush_journal(self) -> None:
        """Write the events kept for a shared store now and stop its writer (the shutdown
        calls it before the store closes)."""
        if self._shared is not None:
            self._shared.close()

    def stored_since(self, session_id: str, seq: int) -> StoredReplay | None:
        """The events a shared store kept of ``session_id`` after ``seq`` (published by any
        host), or None without a shared store or when it cannot be read."""
        if self._shared is None:
            return None
        try:
            return self._shared.since(session_id, seq)
        except StoreError:
            return None

    def close(self) -> None:
        """Deliver what is queued to every subscriber, then end their delivery threads."""
        with self._lock:
            subs = list(self._subscriptions)
        for sub in subs:
            sub.close()
