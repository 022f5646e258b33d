"""Params and results of the ``session.*`` methods, and the events a replay returns."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from contract.results import SessionInfo


@dataclass(frozen=True, slots=True)
class SessionCreateParams:
    """Params of ``session.create``.

    Attributes:
        title: the session's title; empty names it after its first prompt.
    """

    title: str = ""


@dataclass(frozen=True, slots=True)
class SessionCreateResult:
    """Result of ``session.create``.

    Attributes:
        session_id: the new session's id.
    """

    session_id: str


@dataclass(frozen=True, slots=True)
class SessionListParams:
    """Params of ``session.list``.

    Attributes:
        limit: most sessions returned (1..1000).
    """

    limit: int = 50

    def __post_init__(self) -> None:
        if not 1 <= self.limit <= 1000:
            raise ValueError("limit must be 1..1000")


@dataclass(frozen=True, slots=True)
class SessionListResult:
    """Result of ``session.list``.

    Attributes:
        sessions: live and saved sessions, most recently used first.
    """

    sessions: list[SessionInfo]


@dataclass(frozen=True, slots=True)
class SessionResumeParams:
    """Params of ``session.resume``.

    Attributes:
        session_id: the saved session; null resumes the most recent one.
    """

    session_id: str | None = None


@dataclass(frozen=True, slots=True)
class SessionRenameParams:
    """Params of ``session.rename``.

    Attributes:
        session_id: a live or saved session.
        title: the new title (its runs of white space become one space; not empty).
    """

    session_id: str
    title: str


@dataclass(frozen=True, slots=True)
class SessionRenameResult:
    """Result of ``session.rename``.

    Attributes:
        renamed: always true (a refusal is an error).
    """

    renamed: bool


@dataclass(frozen=True, slots=True)
class SessionUndoParams:
    """Params of ``session.undo``.

    Attributes:
        session_id: a live or saved session.
    """

    session_id: str


@dataclass(frozen=True, slots=True)
class SessionDiffParams:
    """Params of ``session.diff``.

    Attributes:
        session_id: a live or saved session.
    """

    session_id: str


@dataclass(frozen=True, slots=True)
class SessionDeleteParams:
    """Params of ``session.delete``.

    Attributes:
        session_id: a live or saved session.
    """

    session_id: str


@dataclass(frozen=True, slots=True)
class SessionDeleteResult:
    """Result of ``session.delete``.

    Attributes:
        deleted: false when there was no such session.
    """

    deleted: bool


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
