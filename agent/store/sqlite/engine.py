"""The SQLite store's engine: the table groups of :mod:`agent.store.sql` on one file.

Statements are already in SQLite's spelling. A write is ``BEGIN IMMEDIATE`` ... ``COMMIT`` on
the writer connection (:meth:`~agent.store.sqlite.connections.Connections.write`). A session is
held by checking it exists: several desks on one file take turns at the write lock, and a
session's claim (:mod:`~agent.store.sqlite.claims`) is taken when it is created or resumed, not
checked by each write.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Collection, Sequence
from typing import Any, TypeVar

from agent.store.errors import StoreNotFound
from agent.store.sql.core import Dialect, Row, Tx
from agent.store.sqlite.claims import SqliteClaims
from agent.store.sqlite.connections import Connections

T = TypeVar("T")

SQLITE = Dialect("sqlite")
"""SQLite's spelling: ``rowid`` keeps insertion order; turns keep no fencing number."""


class SqliteTx:
    """Statements on one SQLite connection (implements :class:`~agent.store.sql.core.Tx`).

    Args:
        conn: the connection, inside the caller's transaction (or reading).
    """

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def one(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        """The first row, or None (a ``RETURNING`` statement is run to its end)."""
        rows: list[Row] = self.conn.execute(sql, params).fetchall()
        return rows[0] if rows else None

    def all(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        """Every row."""
        rows: list[Row] = self.conn.execute(sql, params).fetchall()
        return rows

    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        """How many rows the statement changed."""
        return self.conn.execute(sql, params).rowcount


class SqliteEngine:
    """The SQLite store's engine (implements :class:`~agent.store.sql.core.Engine`).

    Args:
        db: the store's connections.
        claims: its claims (a new session is claimed by its creator).
    """

    dialect = SQLITE

    def __init__(self, db: Connections, claims: SqliteClaims) -> None:
        self._db = db
        self._claims = claims

    def write(self, fn: Callable[[Tx], T], *, wait: bool = True, durable: bool = True) -> T:
        """``fn`` in one ``BEGIN IMMEDIATE`` transaction (see
        :meth:`~agent.store.sqlite.connections.Connections.write` for ``wait`` and
        ``durable``).

        Raises:
            StoreLocked: another writer held the file past the busy timeout (or at all, with
                ``wait=False``).
            StoreError: what ``fn`` raised of it, or a translated SQLite failure.
        """
        with self._db.write(wait=wait, durable=durable) as conn:
            return fn(SqliteTx(conn))

    def read(self, fn: Callable[[Tx], T]) -> T:
        """``fn`` on a reading connection.

        Raises:
            StoreError: a translated SQLite failure.
        """
        with self._db.read() as conn:
            return fn(SqliteTx(conn))

    def hold(
        self, tx: Tx, session_id: str, *, gone: Collection[str] = (), force: bool = False
    ) -> int:
        """Check the session exists; its claim's fencing number.

        Raises:
            StoreNotFound: no such session.
        """
        row = tx.one("SELECT claim_fence FROM sessions WHERE id = ?", (session_id,))
        if row is None:
            raise StoreNotFound(f"no session {session_id!r}", self._db.path)
        return int(row[0])

    def claim_new(self, tx: Tx, session_id: str) -> None:
        """Claim the session being created (:meth:`SqliteClaims.take_new`)."""
        self._claims.take_new(tx, session_id)

    def forget(self, session_id: str) -> None:
        """Forget the deleted session's claim."""
        self._claims.forget(session_id)

    def turns_recovered(self, tx: Tx, turn_ids: Sequence[str]) -> None:
        """Nothing: SQLite keeps no stop rows."""
