"""Checkpoints of the PostgreSQL store: the ``checkpoint_files`` table, with the rules of
:class:`agent.store.sqlite.checkpoints.SqliteCheckpoints`; every write holds the session's
claim (a host that lost the session records nothing in it)."""

from __future__ import annotations

from agent.store.errors import StoreNotFound
from agent.store.postgres.database import Cursor
from agent.store.postgres.shared import StoreContext
from agent.store.rows import CheckpointRow
from agent.store.sqlite.checkpoints import checkpoint_row
from agent.store.sqlite.shared import columns

_COLUMNS = columns(CheckpointRow)


class PostgresCheckpoints:
    """Checkpoints in PostgreSQL (implements :class:`~agent.store.protocol.Checkpoints`).

    Args:
        context: what the table groups of the store share.
    """

    def __init__(self, context: StoreContext) -> None:
        self._db = context.db
        self._where = context.where
        self._clock = context.clock
        self._claims = context.claims

    def record_before(
        self, session_id: str, turn_id: str, path: str, before_data: bytes | None
    ) -> bool:
        """See :meth:`agent.store.sqlite.checkpoints.SqliteCheckpoints.record_before`.

        Raises:
            StoreNotFound: no such session.
            StoreFenced: another host holds the session.
        """
        now = self._clock()

        def tx(cur: Cursor) -> bool:
            cur.execute("SELECT 1 FROM sessions WHERE id = %s", (session_id,))
            if cur.fetchone() is None:
                raise StoreNotFound(f"no session {session_id!r}", self._where)
            self._claims.hold(cur, session_id)
            cur.execute(
                "SELECT 1 FROM checkpoint_files WHERE turn_id = %s AND path = %s", (turn_id, path)
            )
            if cur.fetchone() is not None:
                return False
            cur.execute("SELECT step FROM checkpoint_files WHERE turn_id = %s LIMIT 1", (turn_id,))
            row = cur.fetchone()
            if row is None:
                cur.execute(
                    "SELECT COALESCE(MAX(step), 0) + 1 FROM checkpoint_files WHERE session_id = %s",
                    (session_id,),
                )
                row = cur.fetchone()
            step = int(row[0]) if row is not None else 1
            cur.execute(
                f"INSERT INTO checkpoint_files ({_COLUMNS})"
                " VALUES (%s, %s, %s, %s, %s, NULL, FALSE, %s)",
                (session_id, turn_id, step, path, before_data, now),
            )
            return True

        return self._db.write(tx)

    def record_after(self, turn_id: str, path: str, after_sha: str) -> bool:
        """See :meth:`agent.store.sqlite.checkpoints.SqliteCheckpoints.record_after`."""

        def tx(cur: Cursor) -> bool:
            cur.execute(
                "UPDATE checkpoint_files SET after_sha = %s WHERE turn_id = %s AND path = %s",
                (after_sha, turn_id, path),
            )
            return cur.rowcount == 1

        return self._db.write(tx)

    def checkpoint_files(self, session_id: str) -> list[CheckpointRow]:
        """See :meth:`agent.store.sqlite.checkpoints.SqliteCheckpoints.checkpoint_files`."""

        def q(cur: Cursor) -> list[CheckpointRow]:
            cur.execute(
                f"SELECT {_COLUMNS} FROM checkpoint_files WHERE session_id = %s"
                " ORDER BY step, recorded",
                (session_id,),
            )
            return [checkpoint_row(r) for r in cur.fetchall()]

        return self._db.read(q)

    def mark_undone(self, session_id: str, step: int) -> int:
        """See :meth:`agent.store.sqlite.checkpoints.SqliteCheckpoints.mark_undone`."""

        def tx(cur: Cursor) -> int:
            self._claims.hold(cur, session_id)
            cur.execute(
                "UPDATE checkpoint_files SET undone = TRUE"
                " WHERE session_id = %s AND step = %s AND NOT undone",
                (session_id, step),
            )
            return int(cur.rowcount)

        return self._db.write(tx)
