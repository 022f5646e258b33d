"""Delivery of events to one subscriber, without ever blocking the publisher.

Workers call :meth:`Subscription.publish`, which only appends to a deque under a lock. A delivery
thread of the subscription's own hands events to the subscriber's callback, in order. Deltas of
the same turn (and output pieces of the same tool call) that are still waiting are merged
into one (so a slow subscriber costs memory
proportional to the number of control events, not of tokens), and a batch holding only deltas
is held back until ``coalesce_s`` has passed since the last delta delivery (or longer, when the
subscriber sets the pace: :meth:`Subscription.pace_by`); a control event flushes at once.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable

from contract.events import GatewayEvent

_log = logging.getLogger(__name__)

EventCallback = Callable[[GatewayEvent], None]


class Subscription:
    """One subscriber's queue and delivery thread.

    Args:
        callback: called on the delivery thread with each event, in publish order. It may be
            slow; only this subscriber waits for it. An exception it raises is logged and
            delivery goes on.
        coalesce_s: seconds between two deliveries of deltas (about 0.03).
        name: the delivery thread's name.
    """

    def __init__(
        self, callback: EventCallback, *, coalesce_s: float = 0.03, name: str = "desk-events"
    ) -> None:
        self._callback = callback
        self._coalesce_s = coalesce_s
        self._pending: deque[GatewayEvent] = deque()
        self._cond = threading.Condition()
        self._closed = False
        self._last_delta_at = float("-inf")
        self._gap: Callable[[], float] | None = None
        self.delivered = 0
        """Count of events handed to the callback (merged deltas count once)."""
        self._thread = threading.Thread(target=self._deliver_loop, name=name, daemon=True)
        self._thread.start()

    def pace_by(self, gap: Callable[[], float]) -> None:
        """Let the subscriber slow deltas down to its own pace.

        Args:
            gap: seconds to keep between two deliveries of deltas when longer than
                ``coalesce_s``; called on the delivery thread before each wait for deltas
                (again while it waits), so it may change as the subscriber catches up. It
                must not block. Control events are delivered at once whatever it says.
        """
        self._gap = gap

    def publish(self, event: GatewayEvent) -> None:
        """Queue ``event`` for delivery; never blocks on the subscriber. Thread-safe."""
        with self._cond:
            if self._closed:
                return
            last = self._pending[-1] if self._pending else None
            if last is not None and last.session_id == event.session_id:
                merged = last.payload.merged(event.payload)
                if merged is not None:
                    sid, seq = event.session_id, event.seq
                    self._pending[-1] = GatewayEvent(event.type, sid, seq, merged)
                    return
            self._pending.append(event)
            self._cond.notify()

    def close(self, timeout_s: float = 2.0) -> bool:
        """Deliver what is queued, then end the delivery thread.

        Args:
            timeout_s: how long to wait for the thread, in seconds.

        Returns:
            True if the delivery thread ended within the bound.
        """
        with self._cond:
            self._closed = True
            self._cond.notify()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout_s)
        return not self._thread.is_alive()

    def _take_batch(self) -> list[GatewayEvent] | None:
        with self._cond:
            while True:
                if self._pending:
                    if any(e.control for e in self._pending) or self._closed:
                        break
                    wait = self._last_delta_at + self._delta_gap() - time.monotonic()
                    if wait <= 0:
                        break
                    self._cond.wait(wait)
                    continue
                if self._closed:
                    return None
                self._cond.wait()
            batch = list(self._pending)
            self._pending.clear()
            return batch

    def _delta_gap(self) -> float:
        gap = self._gap
        if gap is None:
            return self._coalesce_s
        try:
            return max(self._coalesce_s, gap())
        except Exception:  # the subscriber's pace must not stop its deliveries
            _log.exception("event subscriber's pace failed; coalescing as usual")
            self._gap = None
            return self._coalesce_s

    def _deliver_loop(self) -> None:
        while (batch := self._take_batch()) is not None:
            had_delta = False
            for event in batch:
                had_delta = had_delta or not event.control
                try:
                    self._callback(event)
                except Exception:  # a subscriber's bug must not stop delivery to it
                    _log.exception("event subscriber failed on %s", event.type)
                self.delivered += 1
            if had_delta:
                self._last_delta_at = time.monotonic()
