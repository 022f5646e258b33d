"""Compression leases of the SQLite store: the ``compression_leases`` table, one row per session.

A commit checks the lease inside its own transaction (:mod:`~agent.store.sqlite.compressions`),
so a holder whose lease expired can never commit. A holder names its owner process
(``<owner>/<attempt>``): a lease whose process is provably gone is taken over at once, not
after its expiry."""

from __future__ import annotations

from agent.store.liveness import holder_owner
from agent.store.rows import LeaseRow
from agent.store.sqlite.shared import StoreContext, columns, require_session

_LEASE_COLUMNS = columns(LeaseRow)


class SqliteLeases:
    """Compression leases in SQLite (implements :class:`~agent.store.protocol.Leases`).

    Args:
        context: what the table groups of the store share (connections, clock, owner).
    """

    def __init__(self, context: StoreContext) -> None:
        self._db = context.db
        self._path = context.path
        self._clock = context.clock
        self._owner = context.owner
        self._liveness = context.liveness

    def acquire_lease(self, session_id: str, holder: str, ttl_s: float) -> bool:
        """Take the session's compression lease when nobody holds it, the holding one expired,
        or its holder's process is provably gone (a crash during a compression).

        Taking it again while holding it renews it.

        Args:
            session_id: the session.
            holder: who takes it: ``<owner>/<attempt id>``
                (:func:`~agent.store.liveness.lease_holder`), so that a later desk can tell
                the holder is gone; a holder naming no owner is freed by its expiry only.
            ttl_s: seconds until it expires unless renewed.

        Returns:
            True when ``holder`` holds the lease now.

        Raises:
            StoreNotFound: no such session.
        """
        now = self._clock()
        with self._db.write() as conn:
            require_session(conn, session_id, self._path)
            held = conn.execute(
                "SELECT holder FROM compression_leases WHERE session_id = ? AND expires_at > ?",
                (session_id, now),
            ).fetchone()
            if held is not None and held[0] != holder and self._holder_gone(held[0]):
                conn.execute("DELETE FROM compression_leases WHERE session_id = ?", (session_id,))
            cur = conn.execute(
                "INSERT INTO compression_leases (session_id, holder, acquired_at, expires_at)"
                " VALUES (?, ?, ?, ?)"
                " ON CONFLICT (session_id) DO UPDATE SET holder = excluded.holder,"
                " acquired_at = excluded.acquired_at, expires_at = excluded.expires_at"
                " WHERE compression_leases.expires_at <= ? OR compression_leases.holder = ?",
                (session_id, holder, now, now + ttl_s, now, holder),
            )
            return cur.rowcount == 1

    def renew_lease(self, session_id: str, holder: str, ttl_s: float) -> bool:
        """Push the expiry of a lease ``holder`` still holds to ``ttl_s`` seconds from now.

        Returns:
            False when ``holder`` does not hold it or it expired (then it may belong to another
            holder already: the caller lost exclusivity and must not commit).
        """
        now = self._clock()
        with self._db.write() as conn:
            cur = conn.execute(
                "UPDATE compression_leases SET expires_at = ?"
                " WHERE session_id = ? AND holder = ? AND expires_at > ?",
                (now + ttl_s, session_id, holder, now),
            )
            return cur.rowcount == 1

    def release_lease(self, session_id: str, holder: str) -> bool:
        """Delete the lease row only if ``holder`` holds it (expired or not).

        Returns:
            True when a row was deleted; False when another holder (or nobody) holds it.
        """
        with self._db.write() as conn:
            cur = conn.execute(
                "DELETE FROM compression_leases WHERE session_id = ? AND holder = ?",
                (session_id, holder),
            )
            return cur.rowcount == 1

    def get_lease(self, session_id: str) -> LeaseRow | None:
        """The lease row (possibly expired), or None."""
        with self._db.read() as conn:
            row = conn.execute(
                f"SELECT {_LEASE_COLUMNS} FROM compression_leases WHERE session_id = ?",
                (session_id,),
            ).fetchone()
        return None if row is None else LeaseRow(*row)

    def _holder_gone(self, holder: str) -> bool:
        """Whether the process that took a lease is provably gone (never this process)."""
        owner = holder_owner(holder)
        return owner is not None and owner != self._owner and not self._liveness.is_alive(owner)
