"""Per-session event numbers from the database, and the events kept for a resume elsewhere.

A gateway numbers a session's events itself (one lock, no round trip per event), but from a
block of numbers the database gave it: :meth:`PostgresEvents.reserve` moves the session's
``event_seq`` forward by a block in one statement and returns where the block starts. Whoever
holds the session next (another host after a takeover, or this one after a restart) reserves
after it, so a session's numbers never repeat, whichever host publishes. A block a host did
not use up leaves a gap in the numbers, never a duplicate.

The events themselves are written in batches (:meth:`PostgresEvents.append`, by the gateway's
journal, off the publishing thread) and the last ``keep`` of each session are kept, so that
``session.events.since`` asked of any host returns what was published after the client's
last number, in order, without gaps (other than unused numbers) or duplicates.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent.store.postgres.database import Cursor, Database
from agent.store.shared import StoredEvent, StoredReplay


class PostgresEvents:
    """The ``session_events`` table and the sessions' ``event_seq`` counters.

    Args:
        db: the store's pool.
        keep: events kept per session (the oldest go first).
    """

    def __init__(self, db: Database, *, keep: int = 2000) -> None:
        self._db = db
        self.keep = keep

    def reserve(self, session_id: str, count: int, *, wait: bool = False) -> int | None:
        """Reserve the next ``count`` numbers of the session's events.

        Args:
            session_id: the session.
            count: how many numbers (>= 1).
            wait: wait for a database that is away (default: give up at once).

        Returns:
            the number before the block (the block is ``base + 1 .. base + count``), or None
            for a session the database does not have.

        Raises:
            StoreError: the database could not be written.
        """

        def tx(cur: Cursor) -> int | None:
            cur.execute(
                "UPDATE sessions SET event_seq = event_seq + %s WHERE id = %s RETURNING event_seq",
                (count, session_id),
            )
            row = cur.fetchone()
            return None if row is None else int(row[0]) - count

        return self._db.write(tx, wait=wait)

    def append(self, events: Sequence[StoredEvent], *, wait: bool = True) -> int:
        """Keep ``events`` (of saved sessions; others are skipped), in one transaction, and
        forget each session's events older than its last ``keep``.

        Args:
            events: the events, in any order.
            wait: False to give up at once (:class:`~agent.store.errors.StoreUnreachable`)
                when the database is away or a session's row is locked.

        Returns:
            how many were written (an event kept already is skipped).

        Raises:
            StoreError: the database could not be written (nothing was).
        """
        if not events:
            return 0

        def tx(cur: Cursor) -> int:
            cur.executemany(
                "INSERT INTO session_events (session_id, seq, type, params)"
                " SELECT %s, %s, %s, %s WHERE EXISTS (SELECT 1 FROM sessions WHERE id = %s)"
                " ON CONFLICT DO NOTHING",
                [(e.session_id, e.seq, e.type, e.params, e.session_id) for e in events],
            )
            written = max(0, cur.rowcount)
            newest: dict[str, int] = {}
            for e in events:
                newest[e.session_id] = max(newest.get(e.session_id, 0), e.seq)
            for session_id, seq in newest.items():
                cur.execute(
                    "WITH gone AS (DELETE FROM session_events WHERE session_id = %s AND seq <= ("
                    " SELECT seq FROM session_events WHERE session_id = %s AND seq <= %s"
                    " ORDER BY seq DESC OFFSET %s LIMIT 1) RETURNING seq)"
                    " UPDATE sessions SET events_dropped_through = GREATEST("
                    " events_dropped_through, (SELECT MAX(seq) FROM gone))"
                    " WHERE id = %s AND EXISTS (SELECT 1 FROM gone)",
                    (session_id, session_id, seq, self.keep, session_id),
                )
            return written

        return self._db.write(tx, wait=wait)

    def since(self, session_id: str, seq: int, *, limit: int = 10_000) -> StoredReplay:
        """The kept events of ``session_id`` numbered above ``seq``, oldest first.

        Raises:
            StoreError: the database cannot be read.
        """

        def q(cur: Cursor) -> StoredReplay:
            cur.execute(
                "SELECT s.events_dropped_through, (SELECT MAX(seq) FROM session_events AS e"
                " WHERE e.session_id = s.id) FROM sessions AS s WHERE s.id = %s",
                (session_id,),
            )
            bounds = cur.fetchone()
            if bounds is None or bounds[1] is None:
                return StoredReplay([], False, seq, False)
            dropped, newest = int(bounds[0]), int(bounds[1])
            cur.execute(
                "SELECT seq, type, params FROM session_events WHERE session_id = %s AND seq > %s"
                " ORDER BY seq LIMIT %s",
                (session_id, seq, limit),
            )
            events = [StoredEvent(session_id, int(r[0]), r[1], r[2]) for r in cur.fetchall()]
            return StoredReplay(events, dropped > seq, max(newest, seq), True)

        return self._db.read(q, wait_s=2.0)
