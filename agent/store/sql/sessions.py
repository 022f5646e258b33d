"""Sessions: the ``sessions`` table (its cooldown columns belong to
:mod:`~agent.store.sql.compressions`, its claim columns to the backend's claims)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from agent.provider.types import ChatMessage
from agent.store.errors import StoreError, StoreFenced
from agent.store.liveness import refusal
from agent.store.rows import NewMessage, SessionRow
from agent.store.sql.core import Core, Tx, must
from agent.store.sql.messages import as_new, columns, insert_messages

_SESSION_COLUMNS = columns(SessionRow)


class SqlSessions:
    """Sessions (implements :class:`~agent.store.protocol.Sessions`); every write holds the
    session (:meth:`~agent.store.sql.core.Engine.hold`).

    Args:
        core: what the table groups of the store share.
    """

    def __init__(self, core: Core) -> None:
        self._e = core.engine
        self._where = core.where
        self._clock = core.clock
        self._owner = core.owner
        self._liveness = core.liveness

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
        items = [as_new(m) for m in messages]

        def tx(t: Tx) -> SessionRow:
            added = t.run(
                "INSERT INTO sessions (id, title, model, cwd, created_at, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
                (sid, title, model, cwd, now, now),
            )
            if added != 1:
                raise StoreError(f"a session {sid!r} exists already", self._where)
            self._e.claim_new(t, sid)
            insert_messages(t, sid, items, None, now)
            return SessionRow(*must(t.one(_BY_ID, (sid,))))

        return self._e.write(tx)

    def get_session(self, session_id: str) -> SessionRow | None:
        """The session, or None when there is none with that id."""
        row = self._e.read(lambda t: t.one(_BY_ID, (session_id,)))
        return None if row is None else SessionRow(*row)

    def ids_starting_with(self, prefix: str, limit: int = 2) -> list[str]:
        """Ids of sessions that start with ``prefix`` (at most ``limit``, in id order): what
        ``--resume abcd1234`` names (as a commit's short id does)."""
        rows = self._e.read(lambda t: t.all(_BY_PREFIX, (len(prefix), prefix, limit)))
        return [str(r[0]) for r in rows]

    def list_sessions(self, limit: int = 50, offset: int = 0) -> list[SessionRow]:
        """Sessions, most recently updated first (ties: most recently created first).

        Args:
            limit: at most this many rows.
            offset: skip this many rows first.
        """
        order = self._e.dialect.session_order
        rows = self._e.read(
            lambda t: t.all(
                f"SELECT {_SESSION_COLUMNS} FROM sessions"
                f" ORDER BY updated_at DESC, {order} DESC LIMIT ? OFFSET ?",
                (limit, offset),
            )
        )
        return [SessionRow(*r) for r in rows]

    def most_recent_session(self) -> SessionRow | None:
        """The most recently updated session, or None when there is none."""
        rows = self.list_sessions(limit=1)
        return rows[0] if rows else None

    def rename_session(self, session_id: str, title: str) -> None:
        """Set the title (and ``updated_at``).

        Raises:
            StoreNotFound: no such session.
            StoreFenced: another owner holds it.
        """
        self._update(session_id, "title = ?, updated_at = ?", (title, self._clock()))

    def set_session_model(self, session_id: str, model: str) -> None:
        """Set the model the session goes on with (a resumed session uses it).

        Raises:
            StoreNotFound: no such session.
            StoreFenced: another owner holds it.
        """
        self._update(session_id, "model = ?", (model,))

    def set_last_error(self, session_id: str, error: str | None) -> None:
        """Remember (or clear, with None) the last error shown for a session.

        Raises:
            StoreNotFound: no such session.
            StoreFenced: another owner holds it.
        """
        self._update(session_id, "last_error = ?", (error,))

    def delete_session(self, session_id: str) -> bool:
        """Delete a session for real, with its messages, turns, lease and attempts (cascade).

        Asking the person to confirm is the UI's job.

        Returns:
            False when there was no such session.

        Raises:
            StoreFenced: another owner holds it (stop it there first).
        """

        row = self._e.read(lambda t: t.one(_CLAIM, (session_id,)))
        holder = None if row is None else row[0]
        if holder is not None and holder != self._owner and self._liveness.is_alive(holder):
            raise StoreFenced(refusal(session_id, holder), self._where, holder)

        def tx(t: Tx) -> bool:
            now = t.one(_CLAIM, (session_id,))
            if now is None:
                return False
            if now[0] not in (None, self._owner, holder):  # claimed meanwhile by a live desk
                raise StoreFenced(refusal(session_id, now[0]), self._where, now[0])
            self._e.hold(t, session_id)
            return t.run("DELETE FROM sessions WHERE id = ?", (session_id,)) == 1

        deleted = self._e.write(tx)
        self._e.forget(session_id)
        return deleted

    def _update(self, session_id: str, assignments: str, values: tuple[object, ...]) -> None:
        def tx(t: Tx) -> None:
            self._e.hold(t, session_id)
            t.run(f"UPDATE sessions SET {assignments} WHERE id = ?", (*values, session_id))

        self._e.write(tx)


_BY_ID = f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE id = ?"
_BY_PREFIX = "SELECT id FROM sessions WHERE substr(id, 1, ?) = ? ORDER BY id LIMIT ?"
_CLAIM = "SELECT claim_owner FROM sessions WHERE id = ?"
