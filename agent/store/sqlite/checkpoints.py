"""Checkpoints of the SQLite store: the ``checkpoint_files`` table.

Before a turn first changes a file of the workspace, the gateway records what the file holds
(:meth:`SqliteCheckpoints.record_before`); once the turn is done with it, a hash of what it holds
then (:meth:`SqliteCheckpoints.record_after`). The turns that changed files are numbered per
session (``step``: 1, 2, 3... in the order they first changed something), so ``/undo`` takes
the newest step not undone yet, puts its files back, and marks it undone
(:meth:`SqliteCheckpoints.mark_undone`). Rows live as long as their session.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent.store.rows import CheckpointRow
from agent.store.sqlite.shared import StoreContext, columns, require_session

_COLUMNS = columns(CheckpointRow)


def checkpoint_row(r: Sequence[Any]) -> CheckpointRow:
    """A row of :data:`_COLUMNS` (the flag is 0/1, the data bytes or None)."""
    data = bytes(r[4]) if r[4] is not None else None
    return CheckpointRow(r[0], r[1], int(r[2]), r[3], data, r[5], bool(r[6]), float(r[7]))


class SqliteCheckpoints:
    """Checkpoints in SQLite (implements :class:`~agent.store.protocol.Checkpoints`).

    Args:
        context: what the table groups of the store share.
    """

    def __init__(self, context: StoreContext) -> None:
        self._db = context.db
        self._path = context.path
        self._clock = context.clock

    def record_before(
        self, session_id: str, turn_id: str, path: str, before_data: bytes | None
    ) -> bool:
        """Keep what ``path`` held before the turn's first change to it, in one transaction.

        The turn's step is the one it has already, else the session's next.

        Args:
            session_id: the session.
            turn_id: the turn about to change the file.
            path: the file's absolute path.
            before_data: its bytes, or None when there is no file.

        Returns:
            False when the turn recorded that path already (nothing is written).

        Raises:
            StoreNotFound: no such session.
            StoreError: the write failed.
        """
        with self._db.write() as conn:
            require_session(conn, session_id, self._path)
            found = conn.execute(
                "SELECT 1 FROM checkpoint_files WHERE turn_id = ? AND path = ?", (turn_id, path)
            ).fetchone()
            if found is not None:
                return False
            row = conn.execute(
                "SELECT step FROM checkpoint_files WHERE turn_id = ? LIMIT 1", (turn_id,)
            ).fetchone()
            if row is None:
                row = conn.execute(
                    "SELECT COALESCE(MAX(step), 0) + 1 FROM checkpoint_files WHERE session_id = ?",
                    (session_id,),
                ).fetchone()
            conn.execute(
                f"INSERT INTO checkpoint_files ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, NULL, 0, ?)",
                (session_id, turn_id, int(row[0]), path, before_data, self._clock()),
            )
            return True

    def record_after(self, turn_id: str, path: str, after_sha: str) -> bool:
        """Note the SHA-256 (hex) of what ``path`` holds once the turn is done ("" no file).

        Returns:
            False when the turn recorded no such path.
        """
        with self._db.write() as conn:
            cur = conn.execute(
                "UPDATE checkpoint_files SET after_sha = ? WHERE turn_id = ? AND path = ?",
                (after_sha, turn_id, path),
            )
            return cur.rowcount == 1

    def checkpoint_files(self, session_id: str) -> list[CheckpointRow]:
        """Every recorded file of the session (undone ones too), by step, then record order."""
        with self._db.read() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM checkpoint_files WHERE session_id = ?"
                " ORDER BY step, rowid",
                (session_id,),
            ).fetchall()
        return [checkpoint_row(r) for r in rows]

    def mark_undone(self, session_id: str, step: int) -> int:
        """Mark the files of one step undone, in one transaction.

        Returns:
            how many rows changed (0: no such step, or undone already).
        """
        with self._db.write() as conn:
            cur = conn.execute(
                "UPDATE checkpoint_files SET undone = 1"
                " WHERE session_id = ? AND step = ? AND undone = 0",
                (session_id, step),
            )
            return cur.rowcount
