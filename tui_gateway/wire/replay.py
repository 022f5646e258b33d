"""A bounded replay ring: the recent events of each session, for ``session.events.since``.

The ring is an ordinary gateway subscriber (call it with each event, e.g. from the callback
given to :meth:`tui_gateway.gateway.Gateway.subscribe`); the gateway knows nothing of it. It keeps
the last ``capacity`` events of each session (deltas as delivered, that is already coalesced)
and the last ``max_sessions`` sessions that had an event. Replaying after ``seq`` says
``truncated`` when an event newer than ``seq`` was dropped to stay within the bound; a gap in
``seq`` alone (coalesced deltas) is not a truncation.

A session the gateway evicted (``session.evicted``: it left the live set, its work stopped) has
no events to come and its transcript is in the store: the ring keeps only that last event of
it (replaying from before it says ``truncated``), so the events of sessions that are gone do
not fill memory up to the bound.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, deque
from dataclasses import dataclass, field

from contract.events import GatewayEvent, SessionEvicted


@dataclass(slots=True)
class _SessionRing:
    events: deque[GatewayEvent]
    dropped_through: int = 0
    """The newest seq that was dropped (0: nothing dropped yet)."""


@dataclass(frozen=True, slots=True)
class Replay:
    """What :meth:`ReplayRing.since` found.

    Attributes:
        events: the kept events after the asked ``seq``, oldest first.
        truncated: True when some event after the asked ``seq`` was dropped from the ring.
        last_seq: the newest seq kept (the asked ``seq`` when nothing newer is kept).
        known: False when the ring never saw an event of this session (or forgot it).
    """

    events: list[GatewayEvent] = field(default_factory=list)
    truncated: bool = False
    last_seq: int = 0
    known: bool = True


class ReplayRing:
    """Keeps each session's recent events. Thread-safe; :meth:`add` is O(1) and never blocks long.

    Args:
        capacity: events kept per session (at least 1).
        max_sessions: sessions kept; the one whose last event is oldest is forgotten first.
    """

    def __init__(self, capacity: int = 2000, max_sessions: int = 256) -> None:
        if capacity < 1 or max_sessions < 1:
            raise ValueError("capacity and max_sessions must be >= 1")
        self.capacity = capacity
        self.max_sessions = max_sessions
        self._lock = threading.Lock()
        self._rings: OrderedDict[str, _SessionRing] = OrderedDict()

    def __call__(self, event: GatewayEvent) -> None:
        """Same as :meth:`add`, so the ring itself can be a subscriber callback."""
        self.add(event)

    def add(self, event: GatewayEvent) -> None:
        """Keep ``event``, dropping its session's oldest one when the session's ring is full,
        or all the others when it is the session's ``session.evicted``."""
        with self._lock:
            ring = self._rings.get(event.session_id)
            if ring is None:
                ring = _SessionRing(deque(maxlen=self.capacity))
                self._rings[event.session_id] = ring
                while len(self._rings) > self.max_sessions:
                    self._rings.popitem(last=False)
            else:
                self._rings.move_to_end(event.session_id)
            if isinstance(event.payload, SessionEvicted) and ring.events:
                ring.dropped_through = max(ring.dropped_through, ring.events[-1].seq)
                ring.events.clear()
            elif len(ring.events) == self.capacity:
                ring.dropped_through = max(ring.dropped_through, ring.events[0].seq)
            ring.events.append(event)

    def since(self, session_id: str, seq: int) -> Replay:
        """The kept events of ``session_id`` whose seq is greater than ``seq``.

        Returns:
            the events, whether some after ``seq`` were dropped, and the newest kept seq.
        """
        with self._lock:
            ring = self._rings.get(session_id)
            if ring is None:
                return Replay(last_seq=seq, known=False)
            events = [e for e in ring.events if e.seq > seq]
            truncated = ring.dropped_through > seq
            last = ring.events[-1].seq if ring.events else seq
        return Replay(events=events, truncated=truncated, last_seq=max(last, seq))

    def sessions(self) -> list[str]:
        """Ids of the sessions the ring holds events of, least recently active first."""
        with self._lock:
            return list(self._rings)
