"""Schedule firings: ``schedule_firings`` and ``schedule_sessions``.

A firing is claimed by inserting its row, keyed by (schedule, due time): several hosts (or
processes on one SQLite file) each compute the same due times and try the insert; the unique key
lets exactly one land (``ON CONFLICT DO NOTHING``), and that one runs the firing. A host killed
mid-firing leaves its turn open, and the turn is recovered as any crash is; the firing is not run
again. ``schedule_sessions`` names the session each schedule's turns go to (inserted once; the
first one stands), and goes with the session when it is deleted.
"""

from __future__ import annotations

from agent.store.firing_row import FiringRow
from agent.store.rows import CRASH_EXIT_REASON, TurnRow
from agent.store.sql.core import Core, Tx, must
from agent.store.sql.messages import columns

_FIRING_COLUMNS = columns(FiringRow)


class SqlFirings:
    """Schedule firings (implements :class:`~agent.store.protocol.Firings`).

    Args:
        core: what the table groups of the store share.
    """

    def __init__(self, core: Core) -> None:
        self._e = core.engine
        self._clock = core.clock
        self._owner = core.owner

    def claim_firing(self, schedule: str, due_at: float) -> bool:
        """Insert the firing's row for this store's owner, or nothing when it exists.

        Returns:
            True when this store won the firing (it runs it).
        """
        now = self._clock()
        tries = 0

        def tx(t: Tx) -> bool:
            nonlocal tries
            tries += 1
            inserted = t.run(
                "INSERT INTO schedule_firings (schedule, due_at, owner, claimed_at)"
                " VALUES (?, ?, ?, ?) ON CONFLICT (schedule, due_at) DO NOTHING",
                (schedule, due_at, self._owner, now),
            )
            if inserted == 1:
                return True
            if tries == 1:
                return False
            # A retry (the connection was lost during COMMIT): a row of ours is the first try's.
            row = t.one(
                "SELECT owner FROM schedule_firings WHERE schedule = ? AND due_at = ?",
                (schedule, due_at),
            )
            return row is not None and row[0] == self._owner

        return self._e.write(tx)

    def start_firing(self, schedule: str, due_at: float, session_id: str, turn_id: str) -> bool:
        """Note the session and turn of a firing this store won.

        Returns:
            False when this store holds no such firing.
        """
        return self._e.write(
            lambda t: (
                t.run(
                    "UPDATE schedule_firings SET session_id = ?, turn_id = ?"
                    " WHERE schedule = ? AND due_at = ? AND owner = ?",
                    (session_id, turn_id, schedule, due_at, self._owner),
                )
                == 1
            )
        )

    def end_firing(self, schedule: str, due_at: float, outcome: str) -> bool:
        """Note a firing's outcome, once.

        Returns:
            False when it was noted already, or there is no such firing.
        """
        now = self._clock()
        return self._e.write(
            lambda t: (
                t.run(
                    "UPDATE schedule_firings SET outcome = ?, ended_at = ?"
                    " WHERE schedule = ? AND due_at = ? AND outcome IS NULL",
                    (outcome, now, schedule, due_at),
                )
                == 1
            )
        )

    def last_firings(self, schedule: str, limit: int = 1) -> list[FiringRow]:
        """The schedule's firings, newest due time first (at most ``limit``)."""
        rows = self._e.read(
            lambda t: t.all(
                f"SELECT {_FIRING_COLUMNS} FROM schedule_firings WHERE schedule = ?"
                " ORDER BY due_at DESC LIMIT ?",
                (schedule, limit),
            )
        )
        return [FiringRow(*r) for r in rows]

    def bind_session(self, schedule: str, session_id: str) -> str:
        """Make ``session_id`` the schedule's session unless it has one already.

        Returns:
            the schedule's session now (``session_id``, or the one bound before).
        """

        def tx(t: Tx) -> str:
            t.run(
                "INSERT INTO schedule_sessions (schedule, session_id) VALUES (?, ?)"
                " ON CONFLICT (schedule) DO NOTHING",
                (schedule, session_id),
            )
            row = t.one("SELECT session_id FROM schedule_sessions WHERE schedule = ?", (schedule,))
            return str(must(row)[0])

        return self._e.write(tx)

    def schedule_session(self, schedule: str) -> str | None:
        """The schedule's session, or None."""
        row = self._e.read(
            lambda t: t.one(
                "SELECT session_id FROM schedule_sessions WHERE schedule = ?", (schedule,)
            )
        )
        return None if row is None else str(row[0])


def close_crashed_firings(t: Tx, turns: list[TurnRow], gone: set[str], now: float) -> None:
    """In a crash recovery's transaction: end the open firings of the owners that are ``gone``
    with ``failed(Crash)``, each with its turn among ``turns`` (the turns just closed).

    A firing names its turn once its host noted it; a host killed between submitting a
    firing's turn and noting it left the row without it: such a turn goes to the latest of its
    owner's open firings of the session's schedule that name no turn and were claimed before it
    started. A firing left without a turn (its host died before submitting) ends without one.
    """
    for turn in turns:
        if turn.parent_turn_id is not None:
            continue
        named = t.run(
            "UPDATE schedule_firings SET outcome = ?, ended_at = ?"
            " WHERE turn_id = ? AND outcome IS NULL",
            (CRASH_EXIT_REASON, now, turn.id),
        )
        if named:
            continue
        t.run(
            "UPDATE schedule_firings SET session_id = ?, turn_id = ?, outcome = ?, ended_at = ?"
            " WHERE outcome IS NULL AND owner = ? AND (schedule, due_at) IN ("
            " SELECT f.schedule, MAX(f.due_at) FROM schedule_firings f"
            " JOIN schedule_sessions s ON s.schedule = f.schedule"
            " WHERE s.session_id = ? AND f.owner = ? AND f.outcome IS NULL"
            " AND f.turn_id IS NULL AND f.claimed_at <= ? GROUP BY f.schedule)",
            (
                turn.session_id,
                turn.id,
                CRASH_EXIT_REASON,
                now,
                turn.owner,
                turn.session_id,
                turn.owner,
                turn.started_at,
            ),
        )
    for owner in sorted(gone):
        t.run(
            "UPDATE schedule_firings SET outcome = ?, ended_at = ?"
            " WHERE owner = ? AND outcome IS NULL",
            (CRASH_EXIT_REASON, now, owner),
        )
