"""Schedule firings of the PostgreSQL store (the rules of
:class:`agent.store.sqlite.firings.SqliteFirings`).

Several hosts on one database each compute the same due times; each tries to insert the
firing's row, keyed by (schedule, due time), and the unique key lets exactly one insert land
(``ON CONFLICT DO NOTHING``): that host runs the firing. A host killed mid-firing leaves its
turn open, and the turn is recovered as any crash is (:mod:`agent.store.postgres.hosts`); the
firing is not run again.
"""

from __future__ import annotations

from agent.store.firing_row import FiringRow
from agent.store.postgres.database import Cursor
from agent.store.postgres.shared import StoreContext
from agent.store.sqlite.shared import columns

_FIRING_COLUMNS = columns(FiringRow)


class PostgresFirings:
    """Schedule firings in PostgreSQL (implements :class:`~agent.store.protocol.Firings`).

    Args:
        context: what the table groups of the store share.
    """

    def __init__(self, context: StoreContext) -> None:
        self._db = context.db
        self._clock = context.clock
        self._owner = context.owner

    def claim_firing(self, schedule: str, due_at: float) -> bool:
        """Insert the firing's row for this host, or nothing when another host has.

        Returns:
            True when this host won the firing (it runs it).
        """
        now = self._clock()
        tries = 0

        def tx(cur: Cursor) -> bool:
            nonlocal tries
            tries += 1
            cur.execute(
                "INSERT INTO schedule_firings (schedule, due_at, owner, claimed_at)"
                " VALUES (%s, %s, %s, %s) ON CONFLICT (schedule, due_at) DO NOTHING"
                " RETURNING owner",
                (schedule, due_at, self._owner, now),
            )
            if cur.fetchone() is not None:
                return True
            if tries == 1:
                return False
            # A retry (a connection lost during COMMIT): a row of this host is the first try's.
            cur.execute(
                "SELECT owner FROM schedule_firings WHERE schedule = %s AND due_at = %s",
                (schedule, due_at),
            )
            row = cur.fetchone()
            return row is not None and row[0] == self._owner

        return self._db.write(tx)

    def start_firing(self, schedule: str, due_at: float, session_id: str, turn_id: str) -> bool:
        """Note the session and turn of a firing this host won (False: none held here)."""

        def tx(cur: Cursor) -> bool:
            cur.execute(
                "UPDATE schedule_firings SET session_id = %s, turn_id = %s"
                " WHERE schedule = %s AND due_at = %s AND owner = %s",
                (session_id, turn_id, schedule, due_at, self._owner),
            )
            return cur.rowcount == 1

        return self._db.write(tx)

    def end_firing(self, schedule: str, due_at: float, outcome: str) -> bool:
        """Note a firing's outcome, once (False: noted already, or no such firing)."""
        now = self._clock()

        def tx(cur: Cursor) -> bool:
            cur.execute(
                "UPDATE schedule_firings SET outcome = %s, ended_at = %s"
                " WHERE schedule = %s AND due_at = %s AND outcome IS NULL",
                (outcome, now, schedule, due_at),
            )
            return cur.rowcount == 1

        return self._db.write(tx)

    def last_firings(self, schedule: str, limit: int = 1) -> list[FiringRow]:
        """The schedule's firings, newest due time first (at most ``limit``)."""

        def q(cur: Cursor) -> list[FiringRow]:
            cur.execute(
                f"SELECT {_FIRING_COLUMNS} FROM schedule_firings WHERE schedule = %s"
                " ORDER BY due_at DESC LIMIT %s",
                (schedule, limit),
            )
            return [FiringRow(*r) for r in cur.fetchall()]

        return self._db.read(q)

    def bind_session(self, schedule: str, session_id: str) -> str:
        """Make ``session_id`` the schedule's session unless it has one already.

        Returns:
            the schedule's session now.
        """

        def tx(cur: Cursor) -> str:
            cur.execute(
                "INSERT INTO schedule_sessions (schedule, session_id) VALUES (%s, %s)"
                " ON CONFLICT (schedule) DO NOTHING",
                (schedule, session_id),
            )
            cur.execute("SELECT session_id FROM schedule_sessions WHERE schedule = %s", (schedule,))
            row = cur.fetchone()
            assert row is not None
            return str(row[0])

        return self._db.write(tx)

    def schedule_session(self, schedule: str) -> str | None:
        """The schedule's session, or None."""

        def q(cur: Cursor) -> str | None:
            cur.execute("SELECT session_id FROM schedule_sessions WHERE schedule = %s", (schedule,))
            row = cur.fetchone()
            return None if row is None else str(row[0])

        return self._db.read(q)
