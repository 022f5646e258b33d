"""Compression leases: the ``compression_leases`` table, one row per session.

A commit checks the lease inside its own transaction (:mod:`~agent.store.sql.compressions`),
so a holder whose lease expired can never commit. Taking, renewing and releasing a lease hold
the session, so an owner whose session was taken over can neither keep nor free a lease there.
A holder names its owner (``<owner>/<attempt>``): a lease whose owner is provably gone is taken
over at once, not after its expiry. A lease's expiry is on the store's clock.
"""

from __future__ import annotations

from collections.abc import Callable

from agent.store.errors import StoreFenced
from agent.store.liveness import holder_owner
from agent.store.rows import LeaseRow
from agent.store.sql.core import Core, Row, Tx
from agent.store.sql.messages import columns

_LEASE_COLUMNS = columns(LeaseRow)


class SqlLeases:
    """Compression leases (implements :class:`~agent.store.protocol.Leases`).

    Args:
        core: what the table groups of the store share.
    """

    def __init__(self, core: Core) -> None:
        self._e = core.engine
        self._clock = core.clock
        self._owner = core.owner
        self._liveness = core.liveness

    def acquire_lease(self, session_id: str, holder: str, ttl_s: float) -> bool:
        """Take the session's compression lease when nobody holds it, the holding one expired,
        or its holder's owner is provably gone (a crash during a compression).

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
            StoreFenced: another owner holds the session.
        """
        now = self._clock()
        held = self.get_lease(session_id)
        gone = None  # a holder whose owner is gone: asked before the transaction, on its own
        if held is not None and held.holder != holder and held.expires_at > now:
            owner = holder_owner(held.holder)
            if owner is not None and owner != self._owner and not self._liveness.is_alive(owner):
                gone = held.holder

        def tx(t: Tx) -> bool:
            self._e.hold(t, session_id)
            if gone is not None:
                t.run(
                    "DELETE FROM compression_leases WHERE session_id = ? AND holder = ?",
                    (session_id, gone),
                )
            taken = t.run(
                "INSERT INTO compression_leases (session_id, holder, acquired_at, expires_at)"
                " VALUES (?, ?, ?, ?)"
                " ON CONFLICT (session_id) DO UPDATE SET holder = excluded.holder,"
                " acquired_at = excluded.acquired_at, expires_at = excluded.expires_at"
                " WHERE compression_leases.expires_at <= ? OR compression_leases.holder = ?",
                (session_id, holder, now, now + ttl_s, now, holder),
            )
            return taken == 1

        return self._e.write(tx)

    def renew_lease(self, session_id: str, holder: str, ttl_s: float) -> bool:
        """Push the expiry of a lease ``holder`` still holds to ``ttl_s`` seconds from now.

        Returns:
            False when ``holder`` does not hold it, it expired, or the session belongs to
            another owner now (then the caller lost exclusivity and must not commit).
        """
        now = self._clock()
        return self._fenced_write(
            lambda t: t.one("SELECT id FROM sessions WHERE id = ?", (session_id,)),
            "UPDATE compression_leases SET expires_at = ?"
            " WHERE session_id = ? AND holder = ? AND expires_at > ?",
            (now + ttl_s, session_id, holder, now),
        )

    def release_lease(self, session_id: str, holder: str) -> bool:
        """Delete the lease row only if ``holder`` holds it (expired or not).

        Returns:
            True when a row was deleted; False when another holder (or nobody) holds it, or
            the session belongs to another owner now.
        """
        return self._fenced_write(
            lambda t: t.one(
                "SELECT session_id FROM compression_leases WHERE session_id = ? AND holder = ?",
                (session_id, holder),
            ),
            "DELETE FROM compression_leases WHERE session_id = ? AND holder = ?",
            (session_id, holder),
        )

    def get_lease(self, session_id: str) -> LeaseRow | None:
        """The lease row (possibly expired), or None."""
        row = self._e.read(
            lambda t: t.one(
                f"SELECT {_LEASE_COLUMNS} FROM compression_leases WHERE session_id = ?",
                (session_id,),
            )
        )
        return None if row is None else LeaseRow(*row)

    def _fenced_write(
        self, find: Callable[[Tx], Row | None], sql: str, values: tuple[object, ...]
    ) -> bool:
        """Run ``sql`` holding the session ``find`` returns (a row whose first column names
        it); False when it finds none, the statement changed no row, or another owner holds
        the session."""

        def tx(t: Tx) -> bool:
            found = find(t)
            if found is None:
                return False
            self._e.hold(t, found[0])
            return t.run(sql, values) == 1

        try:
            return self._e.write(tx)
        except StoreFenced:
            return False
