"""Checkpoints: the ``checkpoint_files`` table.

Before a turn first changes a file of the workspace, the gateway records what the file holds
(:meth:`SqlCheckpoints.record_before`); once the turn is done with it, a hash of what it holds
then (:meth:`SqlCheckpoints.record_after`). The turns that changed files are numbered per
session (``step``: 1, 2, 3... in the order they first changed something), so ``/undo`` takes
the newest step not undone yet, puts its files back, and marks it undone
(:meth:`SqlCheckpoints.mark_undone`). Rows live as long as their session; writes that name the
session hold it (an owner that lost the session records nothing in it).
"""

from __future__ import annotations

from agent.store.rows import CheckpointRow
from agent.store.sql.core import Core, Row, Tx
from agent.store.sql.messages import columns

_COLUMNS = columns(CheckpointRow)


def checkpoint_row(r: Row) -> CheckpointRow:
    """A row of :data:`_COLUMNS` (SQLite's flag is 0/1; the data bytes, a memoryview or None)."""
    data = bytes(r[4]) if r[4] is not None else None
    return CheckpointRow(r[0], r[1], int(r[2]), r[3], data, r[5], bool(r[6]), float(r[7]))


class SqlCheckpoints:
    """Checkpoints (implements :class:`~agent.store.protocol.Checkpoints`).

    Args:
        core: what the table groups of the store share.
    """

    def __init__(self, core: Core) -> None:
        self._e = core.engine
        self._clock = core.clock

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
            StoreFenced: another owner holds the session.
            StoreError: the write failed.
        """
        now = self._clock()

        def tx(t: Tx) -> bool:
            self._e.hold(t, session_id)
            if t.one(
                "SELECT 1 FROM checkpoint_files WHERE turn_id = ? AND path = ?", (turn_id, path)
            ):
                return False
            row = t.one("SELECT step FROM checkpoint_files WHERE turn_id = ? LIMIT 1", (turn_id,))
            if row is None:
                row = t.one(
                    "SELECT COALESCE(MAX(step), 0) + 1 FROM checkpoint_files WHERE session_id = ?",
                    (session_id,),
                )
            step = int(row[0]) if row is not None else 1
            t.run(
                f"INSERT INTO checkpoint_files ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, NULL, FALSE, ?)",
                (session_id, turn_id, step, path, before_data, now),
            )
            return True

        return self._e.write(tx)

    def record_after(self, turn_id: str, path: str, after_sha: str) -> bool:
        """Note the SHA-256 (hex) of what ``path`` holds once the turn is done ("" no file).

        Returns:
            False when the turn recorded no such path.
        """
        changed = self._e.write(
            lambda t: t.run(
                "UPDATE checkpoint_files SET after_sha = ? WHERE turn_id = ? AND path = ?",
                (after_sha, turn_id, path),
            )
        )
        return changed == 1

    def checkpoint_files(self, session_id: str) -> list[CheckpointRow]:
        """Every recorded file of the session (undone ones too), by step, then record order."""
        order = self._e.dialect.checkpoint_order
        rows = self._e.read(
            lambda t: t.all(
                f"SELECT {_COLUMNS} FROM checkpoint_files WHERE session_id = ?"
                f" ORDER BY step, {order}",
                (session_id,),
            )
        )
        return [checkpoint_row(r) for r in rows]

    def mark_undone(self, session_id: str, step: int) -> int:
        """Mark the files of one step undone, in one transaction.

        Returns:
            how many rows changed (0: no such step, or undone already).

        Raises:
            StoreFenced: another owner holds the session.
        """

        def tx(t: Tx) -> int:
            self._e.hold(t, session_id)
            return t.run(
                "UPDATE checkpoint_files SET undone = TRUE"
                " WHERE session_id = ? AND step = ? AND undone = FALSE",
                (session_id, step),
            )

        return self._e.write(tx)
