"""``session.events.since``, the replay of a session's events: its params, result and declaration
(served by the transport from its replay ring, not by the gateway's port)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from contract.limits import REPLAY_CAPACITY
from contract.methods.declare import Method


@dataclass(frozen=True, slots=True)
class EventsSinceParams:
    """Params of ``session.events.since``.

    Attributes:
        session_id: the session ("" for gateway-wide events).
        seq: return the events after this sequence number (0: all that are kept).
    """

    session_id: str
    seq: int = 0

    def __post_init__(self) -> None:
        if self.seq < 0:
            raise ValueError("seq must be >= 0")


@dataclass(frozen=True, slots=True)
class WireEvent:
    """An event as it travels: the ``params`` of an ``event`` notification.

    Attributes:
        type: the payload's event type (see Events).
        session_id: the session ("" for gateway-wide events).
        seq: per-session monotonic sequence number; a gap means coalesced or dropped deltas.
        payload: the event's payload, with its ``version``.
    """

    type: str
    session_id: str
    seq: int
    payload: dict[str, Any]


@dataclass(frozen=True, slots=True)
class EventsSinceResult:
    """Result of ``session.events.since``.

    Attributes:
        session_id: the session.
        events: the kept events after ``seq``, oldest first.
        truncated: true when events after ``seq`` were dropped from the ring (too old).
        last_seq: the newest sequence number kept (``seq`` when nothing is kept).
    """

    session_id: str
    events: list[WireEvent]
    truncated: bool
    last_seq: int


# -- the method: name, params, result, what it does (the transport serves it) --


SESSION_EVENTS_SINCE = Method(
    "session.events.since",
    EventsSinceParams,
    EventsSinceResult,
    f"Replay the session's events after `seq` from a bounded ring ({REPLAY_CAPACITY:,} "
    "events per session by default); `truncated` says when older ones were dropped. A client "
    "that saw a gap in `seq` can fetch what it missed.",
    None,
)

METHODS: tuple[Method[Any, Any], ...] = (SESSION_EVENTS_SINCE,)
"""This group's methods, in the order the reference lists them."""
