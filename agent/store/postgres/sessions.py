"""Sessions of the PostgreSQL store: the ``sessions`` table (its cooldown columns belong to
:mod:`~agent.store.postgres.compressions`). Method by method the SQLite store's
(:class:`agent.store.sqlite.sessions.SqliteSessions`); every write holds the session's claim."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from agent.provider.types import ChatMessage
from agent.store.errors import StoreError
from agent.store.postgres.database import Cursor
from agent.store.postgres.shared import StoreContext, insert_messages
from agent.store.rows import NewMessage, SessionRow
from agent.store.sqlite.shared import as_new, columns

_SESSION_COLUMNS = columns(SessionRow)


class PostgresSessions:
    """Sessions in PostgreSQL (implements :class:`~agent.store.protocol.Sessions`).

    Args:
        context: what the table groups of the store share.
    """

    def __init__(self, context: StoreContext) -> None:
        self._db = context.db
        self._where = context.where
        self._clock = context.clock
        self._claims = context.claims

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
        """Create a session with its first messages and this store's claim, in one transaction.

        Raises:
            StoreError: the id exists already, or the write failed.
        """
        sid = session_id or uuid.uuid4().hex[:12]
        now = self._clock() if created_at is None else created_at
        items = [as_new(m) for m in messages]

        def tx(cur: Cursor) -> SessionRow:
            cur.execute(
                "INSERT INTO sessions (id, title, model, cwd, created_at, updated_at)"
                " VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (id) DO NOTHING",
                (sid, title, model, cwd, now, now),
            )
            if cur.rowcount != 1:
                raise StoreError(f"a session {sid!r} exists already", self._where)
            self._claims.hold(cur, sid)
            insert_messages(cur, sid, items, None, now)
            cur.execute(f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE id = %s", (sid,))
            return SessionRow(*cur.fetchone())  # type: ignore[misc]

        return self._db.write(tx)

    def get_session(self, session_id: str) -> SessionRow | None:
        """The session, or None when there is none with that id."""

        def q(cur: Cursor) -> SessionRow | None:
            cur.execute(f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE id = %s", (session_id,))
            row = cur.fetchone()
            return None if row is None else SessionRow(*row)

        return self._db.read(q)

    def list_sessions(self, limit: int = 50, offset: int = 0) -> list[SessionRow]:
        """Sessions, most recently updated first (ties: most recently created first)."""

        def q(cur: Cursor) -> list[SessionRow]:
            cur.execute(
                f"SELECT {_SESSION_COLUMNS} FROM sessions"
                " ORDER BY updated_at DESC, created_order DESC LIMIT %s OFFSET %s",
                (limit, offset),
            )
            return [SessionRow(*r) for r in cur.fetchall()]

        return self._db.read(q)

    def most_recent_session(self) -> SessionRow | None:
        """The most recently updated session, or None when there is none."""
        rows = self.list_sessions(limit=1)
        return rows[0] if rows else None

    def rename_session(self, session_id: str, title: str) -> None:
        """Set the title (and ``updated_at``).

        Raises:
            StoreNotFound: no such session.
            StoreFenced: another host holds it.
        """

        def tx(cur: Cursor) -> None:
            self._claims.hold(cur, session_id)
            cur.execute(
                "UPDATE sessions SET title = %s, updated_at = %s WHERE id = %s",
                (title, self._clock(), session_id),
            )

        self._db.write(tx)

    def set_last_error(self, session_id: str, error: str | None) -> None:
        """Remember (or clear, with None) the last error shown for a session.

        Raises:
            StoreNotFound: no such session.
            StoreFenced: another host holds it.
        """

        def tx(cur: Cursor) -> None:
            self._claims.hold(cur, session_id)
            cur.execute("UPDATE sessions SET last_error = %s WHERE id = %s", (error, session_id))

        self._db.write(tx)

    def delete_session(self, session_id: str) -> bool:
        """Delete a session with everything in it (cascade); False when absent.

        Raises:
            StoreFenced: another host holds it (stop it there first).
        """

        def tx(cur: Cursor) -> bool:
            cur.execute("SELECT 1 FROM sessions WHERE id = %s", (session_id,))
            if cur.fetchone() is None:
                return False
            self._claims.hold(cur, session_id)
            cur.execute("DELETE FROM sessions WHERE id = %s", (session_id,))
            return cur.rowcount == 1

        deleted = self._db.write(tx)
        self._claims.forget(session_id)
        return deleted
