"""The PostgreSQL store's engine: the table groups of :mod:`agent.store.sql` on a pool.

Statements come in SQLite's spelling; :class:`PostgresTx` turns each ``?`` into ``%s`` (once per
statement text). Every write of a session holds its claim (:meth:`Claims.hold`: the row lock
and the fencing check), and crash recovery marks the stop rows of the turns it closed as taken.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from functools import lru_cache
from typing import Any, TypeVar

from agent.store.postgres.claims import Claims
from agent.store.postgres.database import Cursor, Database
from agent.store.sql.core import Dialect, Row, Tx, any_array

T = TypeVar("T")

POSTGRES = Dialect(
    name="postgres",
    session_order="created_order",
    turn_order="started_order",
    queued_order="queued_order",
    checkpoint_order="recorded",
    turn_fence=True,
    any_of=any_array,
)
"""PostgreSQL's spelling: identity columns keep insertion order; turns keep their fence."""


@lru_cache(maxsize=512)
def spelled(sql: str) -> str:
    """``sql`` with psycopg's placeholders: ``?`` becomes ``%s`` (and a literal ``%``, ``%%``)."""
    return sql.replace("%", "%%").replace("?", "%s")


class PostgresTx:
    """Statements on one psycopg cursor (implements :class:`~agent.store.sql.core.Tx`).

    Args:
        cur: the cursor, inside the caller's transaction (or reading in autocommit).
    """

    def __init__(self, cur: Cursor) -> None:
        self.cur = cur

    def one(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        """The first row, or None."""
        self.cur.execute(spelled(sql), params)
        row: Row | None = self.cur.fetchone()
        return row

    def all(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        """Every row."""
        self.cur.execute(spelled(sql), params)
        rows: list[Row] = self.cur.fetchall()
        return rows

    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        """How many rows the statement changed."""
        self.cur.execute(spelled(sql), params)
        return int(self.cur.rowcount)


def _cursor(tx: Tx) -> Cursor:
    assert isinstance(tx, PostgresTx)
    return tx.cur


class PostgresEngine:
    """The PostgreSQL store's engine (implements :class:`~agent.store.sql.core.Engine`).

    Args:
        db: the store's pool.
        claims: the sessions this store holds, checked by every write of a session.
        owner: this store's owner string (it takes the stop rows of the turns it recovers).
    """

    dialect = POSTGRES

    def __init__(self, db: Database, claims: Claims, owner: str) -> None:
        self._db = db
        self._claims = claims
        self._owner = owner

    def write(self, fn: Callable[[Tx], T], *, wait: bool = True, durable: bool = True) -> T:
        """``fn`` in one transaction on a pooled connection, retried while the database is
        away (see :meth:`~agent.store.postgres.database.Database.write`; every commit is
        durable).

        Raises:
            StoreUnreachable: away past the reconnect bound (or at all, with ``wait=False``).
            StoreError: what ``fn`` raised of it, or any other failure (translated).
        """
        return self._db.write(lambda cur: fn(PostgresTx(cur)), wait=wait)

    def read(self, fn: Callable[[Tx], T]) -> T:
        """``fn`` in autocommit on a pooled connection.

        Raises:
            StoreUnreachable, StoreError: as for :meth:`write`.
        """
        return self._db.read(lambda cur: fn(PostgresTx(cur)))

    def hold(
        self, tx: Tx, session_id: str, *, gone: Collection[str] = (), force: bool = False
    ) -> int:
        """Lock the session's row and check (or take) its claim (:meth:`Claims.hold`).

        Raises:
            StoreNotFound: no such session.
            StoreFenced: a live host holds it, or took it over from this store.
        """
        return self._claims.hold(_cursor(tx), session_id, gone=gone, force=force)

    def claim_new(self, tx: Tx, session_id: str) -> None:
        """Claim the session being created (it is nobody's yet)."""
        self._claims.hold(_cursor(tx), session_id)

    def forget(self, session_id: str) -> None:
        """Forget the deleted session's claim."""
        self._claims.forget(session_id)

    def turns_recovered(self, tx: Tx, turn_ids: Sequence[str]) -> None:
        """Mark the stops still waiting for these turns as taken: their outcome is fixed."""
        tx.run(
            "UPDATE stop_requests SET taken_at = clock_timestamp(), taken_by = ?"
            " WHERE turn_id = ANY(?) AND taken_at IS NULL",
            (self._owner, list(turn_ids)),
        )
