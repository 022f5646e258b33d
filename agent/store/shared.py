"""What a store several gateway hosts share must offer besides the table groups (PostgreSQL).

A :class:`SharedStore` is a :class:`~agent.store.protocol.SessionStore` whose sessions may be
live on another host. It adds:

- :attr:`SharedStore.stops` (:class:`StopMail`): a stop for a turn another host runs travels as
  a durable row plus a notification; each host listens for the stops addressed to it;
- :attr:`SharedStore.events` (:class:`EventLog`): a session's event numbers come from the
  database in blocks, and its events are kept, so a client resumes on any host.

(A session's live state belongs to one owner at a time on every store:
:meth:`~agent.store.protocol.SessionStore.claim_session`.)

The values they exchange are defined here, so the gateway codes against this module only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol, runtime_checkable

from agent.store.protocol import SessionStore


class StopKind(StrEnum):
    """What a stop row stops."""

    TURN = "turn"
    """The running turn (``session.interrupt``)."""
    COMPRESSION = "compression"
    """The running compression only (``compression.cancel``)."""


@dataclass(frozen=True, slots=True)
class RunningTurn:
    """The open turn of a session, and the owner (host) that runs it (``turn_id`` "" stands
    for whatever that host runs in the session: a ``/compress``, which has no turn row)."""

    turn_id: str
    session_id: str
    owner: str


@dataclass(frozen=True, slots=True)
class StopLetter:
    """One stop row, as the host it is addressed to takes it.

    Attributes:
        id: the row id.
        session_id: the session.
        turn_id: the turn the sender saw running, or None for "whatever runs".
        kind: what to stop.
        issuer: ``user`` or ``system``, as the sender booked it.
        surface: the sender's surface (``api.stop``, ``desk.key``...).
        reason: the sender's human text.
        sent_by: the sending host's owner string.
        age_s: seconds from the row's commit to its taking, on the database's clock.
    """

    id: int
    session_id: str
    turn_id: str | None
    kind: StopKind
    issuer: str
    surface: str
    reason: str
    sent_by: str
    age_s: float


Deliver = Callable[[list[StopLetter]], None]
"""Receives the stops this host took, oldest first (called on the listener's thread)."""


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """One event as kept: its session, number, type and wire params (JSON text)."""

    session_id: str
    seq: int
    type: str
    params: str


@dataclass(frozen=True, slots=True)
class StoredReplay:
    """What :meth:`EventLog.since` found.

    Attributes:
        events: the kept events after the asked number, oldest first.
        truncated: True when events after the asked number are no longer kept (numbers a
            host reserved and never used are gaps, not truncation).
        last_seq: the newest number kept (the asked one when nothing newer is kept).
        known: False when the session has no events kept at all.
    """

    events: list[StoredEvent]
    truncated: bool
    last_seq: int
    known: bool


@runtime_checkable
class StopMail(Protocol):
    """Stops between hosts."""

    def running_turn(self, session_id: str, turn_id: str | None = None) -> RunningTurn | None:
        """The open turn of the session (only ``turn_id``, when given), or None."""
        ...

    def live_owner(self, session_id: str) -> str | None:
        """The running owner that holds the session live; "" when none does; None for no
        such session."""
        ...

    def session_of(self, turn_id: str) -> str | None:
        """The session of a turn, or None."""
        ...

    def send(
        self, running: RunningTurn, kind: StopKind, *, issuer: str, surface: str, reason: str
    ) -> int:
        """Write a stop row addressed to ``running.owner`` and notify it; the row id."""
        ...

    def listen(self, deliver: Deliver) -> None:
        """Start handing the stops addressed to this host to ``deliver`` (once)."""
        ...


@runtime_checkable
class EventLog(Protocol):
    """Event numbers and kept events of the sessions."""

    def reserve(self, session_id: str, count: int, *, wait: bool = False) -> int | None:
        """Reserve the next ``count`` numbers; the number before the block, or None."""
        ...

    def append(self, events: Sequence[StoredEvent], *, wait: bool = True) -> int:
        """Keep events (of saved sessions), in one transaction; how many were written
        (``wait=False``: give up at once when the database is away or busy)."""
        ...

    def since(self, session_id: str, seq: int, *, limit: int = 10_000) -> StoredReplay:
        """The kept events numbered above ``seq``, oldest first."""
        ...


@runtime_checkable
class SharedStore(SessionStore, Protocol):
    """A session store several gateway hosts share."""

    @property
    def stops(self) -> StopMail:
        """Stops between hosts (:class:`StopMail`)."""
        ...

    @property
    def events(self) -> EventLog:
        """Event numbers and kept events (:class:`EventLog`)."""
        ...
