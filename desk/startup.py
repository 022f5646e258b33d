"""What the desk does at start about saved sessions: which store, and which session to show.

:func:`open_store` opens the session database for ``desk`` (``--db PATH`` or the default
place). A database that cannot be opened is not fatal: the desk runs with sessions kept in
memory and shows the one-line reason (:attr:`Startup.notice`). :class:`Startup` is what the
app receives: resume a session or start a new one, the notice, and the wall clock the
sessions sidebar measures "5 min ago" with.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agent.store import SessionStore, StoreError
from agent.store import open_store as open_session_store

RECENT_MESSAGES = 200
"""Messages of a resumed session rendered at first; older ones wait behind "show more"."""


@dataclass(frozen=True, slots=True)
class Startup:
    """How the desk starts.

    Attributes:
        resume: reopen a saved session instead of creating a new one.
        resume_id: the session to reopen, or None for the most recent one.
        notice: one line to show at start (e.g. why sessions are not saved), or "".
        wall_clock: unix seconds now (``time.time`` or a test's pinned clock), for relative
            times in the sessions sidebar.
        recent_messages: how many of a resumed session's last messages are rendered at first.
    """

    resume: bool = False
    resume_id: str | None = None
    notice: str = ""
    wall_clock: Callable[[], float] = time.time
    recent_messages: int = RECENT_MESSAGES


def open_store(path: str | Path | None) -> tuple[SessionStore | None, str]:
    """Open the session database, or say in one line why it cannot be used.

    Args:
        path: the ``--db`` path, or None for :func:`agent.store.default_db_path`.

    Returns:
        ``(store, "")`` on success; ``(None, notice)`` when it cannot be opened (locked,
        read-only, corrupt, a directory...), where ``notice`` is one line for the person.
    """
    try:
        return open_session_store(path), ""
    except StoreError as exc:
        message = " ".join(exc.message.split())
        return None, f"sessions are not saved: {message}; this desk keeps them in memory only"
