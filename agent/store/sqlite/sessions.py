"""Sessions of the SQLite store: the ``sessions`` table (its cooldown columns belong to
:mod:`~agent.store.sqlite.compressions`)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from agent.provider.types import ChatMessage
from agent.store.errors import StoreError, StoreNotFound
from agent.store.rows import NewMessage, SessionRow
from agent.store.sqlite.claims import SqliteClaims
from agent.store.sqlite.shared import StoreContext, as_new, columns, insert_messages

_SESSION_COLUMNS = columns(SessionRow)


class SqliteSessions:
    """Sessions in SQLite (implements :class:`~agent.store.protocol.Sessions`).

    Args:
        context: what the table groups of the store share (connections, clock, owner).
        claims: the store's claims (a new session is claimed by its creator).
    """

    def __init__(self, context: StoreContext, claims: SqliteClaims) -> None:
        self._claims = claims
        self._db = context.db
        self._path = context.path
        self._clock = context.clock

    def create_session(
        self,
        session_id: str | None = None,
        *,
        title: str = "",
        model: str = "",
        cwd: str = "",
        created_at: float | None = None,
        messages: Sequence[ChatMessage | NewMessage] = (),
    ) -> SessionRow:
        """Create a session, with its first messages (e.g. the system prompt) and this store's
        claim, in one transaction.

        Args:
            session_id: the id; None for a new random one (12 hex digits).
            title: shown in lists.
            model: the model name.
            cwd: the working directory.
            created_at: unix seconds; None for the clock.
            messages: initial transcript, positions 0, 1, ...

        Returns:
            the new row.

        Raises:
            StoreError: the id exists already, or the write failed.
        """
        sid = session_id or uuid.uuid4().hex[:12]
        now = self._clock() if created_at is None else created_at
        with self._db.write() as conn:
            if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (sid,)).fetchone():
                raise StoreError(f"a session {sid!r} exists already", self._path)
            conn.execute(
                "INSERT INTO sessions (id, title, model, cwd, created_at, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (sid, title, model, cwd, now, now),
            )
            self._claims.take_new(conn, sid)
            insert_messages(conn, sid, [as_new(m) for m in messages], None, now)
            row = conn.execute(
                f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE id = ?", (sid,)
            ).fetchone()
        return SessionRow(*row)

    def get_session(self, session_id: str) -> SessionRow | None:
        """The session, or None when there is none with that id."""
        with self._db.read() as conn:
            row = conn.execute(
                f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE id = ?", (session_id,)
            ).fetchone()
        return None if row is None else SessionRow(*row)

    def list_sessions(self, limit: int = 50, offset: int = 0) -> list[SessionRow]:
        """Sessions, most recently updated first (ties: most recently created first).

        Args:
            limit: at most this many rows.
            offset: skip this many rows first.
        """
        with self._db.read() as conn:
            rows = conn.execute(
                f"SELECT {_SESSION_COLUMNS} FROM sessions"
                " ORDER BY updated_at DESC, rowid DESC LIMIT ? OFFSET ?",
                (limit, offset),
            ).fetchall()
        return [SessionRow(*r) for r in rows]

    def most_recent_session(self) -> SessionRow | None:
        """The most recently updated session, or None when there is none."""
        rows = self.list_sessions(limit=1)
        return rows[0] if rows else None

    def rename_session(self, session_id: str, title: str) -> None:
        """Set the title (and ``updated_at``).

        Raises:
            StoreNotFound: no such session.
        """
        with self._db.write() as conn:
            cur = conn.execute(
                "UPDATE sessions SET title = ?, updated_at = ? WHERE id = ?",
                (title, self._clock(), session_id),
            )
            if cur.rowcount != 1:
                raise StoreNotFound(f"no session {session_id!r}", self._path)

    def set_last_error(self, session_id: str, error: str | None) -> None:
        """Remember (or clear, with None) the last error shown for a session.

        Raises:
            StoreNotFound: no such session.
        """
        with self._db.write() as conn:
            cur = conn.execute(
                "UPDATE sessions SET last_error = ? WHERE id = ?", (error, session_id)
            )
            if cur.rowcount != 1:
                raise StoreNotFound(f"no session {session_id!r}", self._path)

    def delete_session(self, session_id: str) -> bool:
        """Delete a session for real, with its messages, turns, lease and attempts (cascade).

        Asking the person to confirm is the UI's job.

        Returns:
            False when there was no such session.
        """
        with self._db.write() as conn:
            cur = conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
        self._claims.forget(session_id)
        return cur.rowcount == 1
