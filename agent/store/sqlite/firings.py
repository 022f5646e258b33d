"""Schedule firings of the SQLite store: ``schedule_firings`` and ``schedule_sessions``.

A firing is claimed by inserting its row, keyed by (schedule, due time): the insert that finds
the row there already changes nothing, so of several processes on one file exactly one wins
each firing. ``schedule_sessions`` names the session each schedule's turns go to (inserted
once; the first one stands), and goes with the session when it is deleted.
"""

from __future__ import annotations

from agent.store.firing_row import FiringRow
from agent.store.sqlite.shared import StoreContext, columns

_FIRING_COLUMNS = columns(FiringRow)


class SqliteFirings:
    """Schedule firings in SQLite (implements :class:`~agent.store.protocol.Firings`).

    Args:
        context: what the table groups of the store share (connections, clock, owner).
    """

    def __init__(self, context: StoreContext) -> None:
        self._db = context.db
        self._clock = context.clock
        self._owner = context.owner

    def claim_firing(self, schedule: str, due_at: float) -> bool:
        """Insert the firing's row for this store's owner, or nothing when it exists.

        Returns:
            True when this store won the firing (it runs it).
        """
        with self._db.write() as conn:
            cur = conn.execute(
                "INSERT INTO schedule_firings (schedule, due_at, owner, claimed_at)"
                " VALUES (?, ?, ?, ?) ON CONFLICT (schedule, due_at) DO NOTHING",
                (schedule, due_at, self._owner, self._clock()),
            )
            return cur.rowcount == 1

    def start_firing(self, schedule: str, due_at: float, session_id: str, turn_id: str) -> bool:
        """Note the session and turn of a firing this store won.

        Returns:
            False when this store holds no such firing.
        """
        with self._db.write() as conn:
            cur = conn.execute(
                "UPDATE schedule_firings SET session_id = ?, turn_id = ?"
                " WHERE schedule = ? AND due_at = ? AND owner = ?",
                (session_id, turn_id, schedule, due_at, self._owner),
            )
            return cur.rowcount == 1

    def end_firing(self, schedule: str, due_at: float, outcome: str) -> bool:
        """Note a firing's outcome, once.

        Returns:
            False when it was noted already, or there is no such firing.
        """
        with self._db.write() as conn:
            cur = conn.execute(
                "UPDATE schedule_firings SET outcome = ?, ended_at = ?"
                " WHERE schedule = ? AND due_at = ? AND outcome IS NULL",
                (outcome, self._clock(), schedule, due_at),
            )
            return cur.rowcount == 1

    def last_firings(self, schedule: str, limit: int = 1) -> list[FiringRow]:
        """The schedule's firings, newest due time first (at most ``limit``)."""
        with self._db.read() as conn:
            rows = conn.execute(
                f"SELECT {_FIRING_COLUMNS} FROM schedule_firings WHERE schedule = ?"
                " ORDER BY due_at DESC LIMIT ?",
                (schedule, limit),
            ).fetchall()
        return [FiringRow(*r) for r in rows]

    def bind_session(self, schedule: str, session_id: str) -> str:
        """Make ``session_id`` the schedule's session unless it has one already.

        Returns:
            the schedule's session now (``session_id``, or the one bound before).
        """
        with self._db.write() as conn:
            conn.execute(
                "INSERT INTO schedule_sessions (schedule, session_id) VALUES (?, ?)"
                " ON CONFLICT (schedule) DO NOTHING",
                (schedule, session_id),
            )
            row = conn.execute(
                "SELECT session_id FROM schedule_sessions WHERE schedule = ?", (schedule,)
            ).fetchone()
        return str(row[0])

    def schedule_session(self, schedule: str) -> str | None:
        """The schedule's session, or None."""
        with self._db.read() as conn:
            row = conn.execute(
                "SELECT session_id FROM schedule_sessions WHERE schedule = ?", (schedule,)
            ).fetchone()
        return None if row is None else str(row[0])
