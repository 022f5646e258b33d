"""The events a remote gateway sends, handed to the frontend's subscribers, and the turns they
leave running when the gateway process dies, ended for them.

:class:`~tui_gateway.wire.client.RemoteGateway` decodes each ``event`` notification and hands it
here (:meth:`RemoteEvents.deliver`); the events tell which turns and child agents run. When the
child process exits, :meth:`RemoteEvents.gateway_exited` ends each of them for the subscribers,
once, as ``failed(GatewayExited)`` (the process booked nothing).
"""

from __future__ import annotations

import threading

from agent.outcome import ExitReason, TurnStatus
from contract.events import (
    ChildCompleted,
    ChildStarted,
    GatewayEvent,
    MessageComplete,
    MessageStart,
)
from contract.kinds import ChildDelivery
from contract.subscription import EventCallback, Subscription


class RemoteEvents:
    """A remote gateway's subscribers, and what its events say runs. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._subs: list[Subscription] = []
        self._running: set[tuple[str, str]] = set()
        self._children: dict[tuple[str, str], str] = {}  # (session, child) -> its parent
        self._last_seq: dict[str, int] = {}

    def subscribe(self, callback: EventCallback) -> Subscription:
        """Deliver every event from now on to ``callback``, on a delivery thread of its own."""
        sub = Subscription(callback, coalesce_s=0.0, name="desk-remote-events")
        with self._lock:
            self._subs.append(sub)
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        """Stop delivering to ``sub`` and end its delivery thread."""
        with self._lock:
            if sub in self._subs:
                self._subs.remove(sub)
        sub.close()

    def close(self) -> None:
        """End every subscriber's delivery thread; no event is delivered after."""
        with self._lock:
            subs, self._subs = list(self._subs), []
        for sub in subs:
            sub.close()

    @property
    def running_turns(self) -> int:
        """How many turns run now, as the events said."""
        with self._lock:
            return len(self._running)

    def deliver(self, event: GatewayEvent) -> None:
        """Note what ``event`` says runs, then hand it to every subscriber."""
        payload = event.payload
        with self._lock:
            if isinstance(payload, MessageStart):
                self._running.add((event.session_id, payload.turn_id))
            elif isinstance(payload, MessageComplete):
                self._running.discard((event.session_id, payload.turn_id))
            elif isinstance(payload, ChildStarted):
                self._children[(event.session_id, payload.turn_id)] = payload.parent_turn_id
            elif isinstance(payload, ChildCompleted):
                self._children.pop((event.session_id, payload.turn_id), None)
            self._last_seq[event.session_id] = max(
                event.seq, self._last_seq.get(event.session_id, 0)
            )
            subs = list(self._subs)
        for sub in subs:
            sub.publish(event)

    def gateway_exited(self) -> None:
        """End, for the subscribers, every child agent and turn still running when the gateway
        process died (``child.complete``, then ``message.complete``, each ``failed``)."""
        with self._lock:
            orphans = sorted(self._running)
            children = sorted(self._children.items())
        failed = ExitReason.failed("GatewayExited")
        for (session_id, child_id), parent in children:
            ended = ChildCompleted(
                turn_id=child_id,
                parent_turn_id=parent,
                status=TurnStatus.FAILED,
                exit_reason=failed,
                text="",
                delivery=ChildDelivery.NOTE,
                error="the gateway process exited while the child agent ran",
            )
            self.deliver(GatewayEvent(ended.TYPE, session_id, self._next_seq(session_id), ended))
        for session_id, turn_id in orphans:
            complete = MessageComplete(
                turn_id=turn_id,
                status=TurnStatus.FAILED,
                exit_reason=ExitReason.failed("GatewayExited"),
                text="",
                error="the gateway process exited while the turn ran",
            )
            seq = self._next_seq(session_id)
            self.deliver(GatewayEvent(complete.TYPE, session_id, seq, complete))

    def _next_seq(self, session_id: str) -> int:
        with self._lock:
            return self._last_seq.get(session_id, 0) + 1
