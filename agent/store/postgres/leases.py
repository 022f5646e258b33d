"""Compression leases of the PostgreSQL store: the ``compression_leases`` table, one row per
session (the rules of :class:`agent.store.sqlite.leases.SqliteLeases`).

A lease's expiry is on the store's clock, as in SQLite. Across hosts the lease is fenced as
well: taking, renewing and releasing it hold the session's claim, so a host whose session was
taken over can neither keep nor free a lease there, and a commit (which checks the lease inside
its own transaction, :mod:`~agent.store.postgres.compressions`) holds the claim too. A holder
names its owner (``<owner>/<attempt>``): a lease whose owner is provably gone (its host's
heartbeat stopped) is taken over at once, not after its expiry.
"""

from __future__ import annotations

from agent.store.errors import StoreFenced
from agent.store.liveness import holder_owner
from agent.store.postgres.database import Cursor
from agent.store.postgres.shared import StoreContext
from agent.store.rows import LeaseRow
from agent.store.sqlite.shared import columns

_LEASE_COLUMNS = columns(LeaseRow)


class PostgresLeases:
    """Compression leases in PostgreSQL (implements :class:`~agent.store.protocol.Leases`).

    Args:
        context: what the table groups of the store share.
    """

    def __init__(self, context: StoreContext) -> None:
        self._db = context.db
        self._clock = context.clock
        self._claims = context.claims
        self._owner = context.owner
        self._liveness = context.liveness

    def acquire_lease(self, session_id: str, holder: str, ttl_s: float) -> bool:
        """Take the session's compression lease when nobody holds it, the holding one expired,
        or its holder's owner is provably gone; taking it again while holding it renews it.

        Returns:
            True when ``holder`` holds the lease now.

        Raises:
            StoreNotFound: no such session.
            StoreFenced: another host holds the session.
        """
        now = self._clock()
        held = self.get_lease(session_id)
        gone = None  # a holder whose owner is gone: asked before the transaction, on its own
        if held is not None and held.holder != holder and held.expires_at > now:
            owner = holder_owner(held.holder)
            if owner is not None and owner != self._owner and not self._liveness.is_alive(owner):
                gone = held.holder

        def tx(cur: Cursor) -> bool:
            self._claims.hold(cur, session_id)
            if gone is not None:
                cur.execute(
                    "DELETE FROM compression_leases WHERE session_id = %s AND holder = %s",
                    (session_id, gone),
                )
            cur.execute(
                "INSERT INTO compression_leases (session_id, holder, acquired_at, expires_at)"
                " VALUES (%s, %s, %s, %s)"
                " ON CONFLICT (session_id) DO UPDATE SET holder = excluded.holder,"
                " acquired_at = excluded.acquired_at, expires_at = excluded.expires_at"
                " WHERE compression_leases.expires_at <= %s OR compression_leases.holder = %s",
                (session_id, holder, now, now + ttl_s, now, holder),
            )
            return cur.rowcount == 1

        return self._db.write(tx)

    def renew_lease(self, session_id: str, holder: str, ttl_s: float) -> bool:
        """Push the expiry of a lease ``holder`` still holds to ``ttl_s`` seconds from now.

        Returns:
            False when ``holder`` does not hold it, it expired, or the session belongs to
            another host now (the caller lost exclusivity and must not commit).
        """
        now = self._clock()

        def tx(cur: Cursor) -> bool:
            cur.execute("SELECT 1 FROM sessions WHERE id = %s", (session_id,))
            if cur.fetchone() is None:
                return False
            self._claims.hold(cur, session_id)
            cur.execute(
                "UPDATE compression_leases SET expires_at = %s"
                " WHERE session_id = %s AND holder = %s AND expires_at > %s",
                (now + ttl_s, session_id, holder, now),
            )
            return cur.rowcount == 1

        try:
            return self._db.write(tx)
        except StoreFenced:
            return False

    def release_lease(self, session_id: str, holder: str) -> bool:
        """Delete the lease row only if ``holder`` holds it (expired or not).

        Returns:
            True when a row was deleted; False when another holder (or nobody) holds it, or
            the session belongs to another host now.
        """

        def tx(cur: Cursor) -> bool:
            cur.execute(
                "SELECT 1 FROM compression_leases WHERE session_id = %s AND holder = %s",
                (session_id, holder),
            )
            if cur.fetchone() is None:
                return False
            self._claims.hold(cur, session_id)
            cur.execute(
                "DELETE FROM compression_leases WHERE session_id = %s AND holder = %s",
                (session_id, holder),
            )
            return cur.rowcount == 1

        try:
            return self._db.write(tx)
        except StoreFenced:
            return False

    def get_lease(self, session_id: str) -> LeaseRow | None:
        """The lease row (possibly expired), or None."""

        def q(cur: Cursor) -> LeaseRow | None:
            cur.execute(
                f"SELECT {_LEASE_COLUMNS} FROM compression_leases WHERE session_id = %s",
                (session_id,),
            )
            row = cur.fetchone()
            return None if row is None else LeaseRow(*row)

        return self._db.read(q)
