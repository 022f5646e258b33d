"""The ``session.*`` methods that make, list and change sessions: params, results, declarations."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from contract.methods.declare import Method
from contract.ports import DeskGateway
from contract.results import ResumedSession, SessionDiff, SessionInfo, UndoResult


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


# -- the methods: name, params, result, what it does, and the call into the gateway --

SESSION_CREATE = Method(
    "session.create",
    SessionCreateParams,
    SessionCreateResult,
    "Create an empty live session. When the gateway holds too many, the least recently "
    "used one is evicted (its running turn is stopped as `session.evicted` first).",
    lambda g, p: SessionCreateResult(session_id=g.session_create(p.title)),
    blocking=True,
)

SESSION_LIST = Method(
    "session.list",
    SessionListParams,
    SessionListResult,
    "Live and saved sessions, most recently used first.",
    lambda g, p: SessionListResult(sessions=g.session_list(p.limit)),
    blocking=True,
)

SESSION_RESUME = Method(
    "session.resume",
    SessionResumeParams,
    ResumedSession,
    "Make a saved session live again and return its transcript (archived messages left out).",
    lambda g, p: g.session_resume(p.session_id),
    blocking=True,
)


def _rename(gateway: DeskGateway, p: SessionRenameParams) -> SessionRenameResult:
    gateway.session_rename(p.session_id, p.title)
    return SessionRenameResult(renamed=True)


SESSION_RENAME = Method(
    "session.rename",
    SessionRenameParams,
    SessionRenameResult,
    "Rename a live or saved session.",
    _rename,
    blocking=True,
)

SESSION_DELETE = Method(
    "session.delete",
    SessionDeleteParams,
    SessionDeleteResult,
    "Delete a session for good; its running turn is stopped first (the person asked: "
    "`interrupted_by_user`) and waited for (bounded).",
    lambda g, p: SessionDeleteResult(deleted=g.session_delete(p.session_id)),
    blocking=True,
)

SESSION_UNDO = Method(
    "session.undo",
    SessionUndoParams,
    UndoResult,
    "Put the workspace's files back as they were before the session's last turn that "
    "changed them (not undone yet; again: the one before), from the checkpoints in the "
    "session store: a file the turn changed or deleted is written back (`restored`), one it "
    "created is removed (`removed`). Returns the diff it reverted and the files it left as "
    "they are (changed outside desk since). Refused while a turn runs in the session.",
    lambda g, p: g.session_undo(p.session_id),
    blocking=True,
)

SESSION_DIFF = Method(
    "session.diff",
    SessionDiffParams,
    SessionDiff,
    "What the session's turns changed in the workspace (undone turns left out), as one "
    "unified diff from the files as the session found them to now.",
    lambda g, p: g.session_diff(p.session_id),
    blocking=True,
)

METHODS: tuple[Method[Any, Any], ...] = (
    SESSION_CREATE,
    SESSION_LIST,
    SESSION_RESUME,
    SESSION_RENAME,
    SESSION_DELETE,
    SESSION_UNDO,
    SESSION_DIFF,
)
"""This group's methods, in the order the reference lists them."""
