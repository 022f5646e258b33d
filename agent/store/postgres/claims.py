"""Which host holds each session's live state, and the fencing number every write checks.

Several gateways on one database must never both write one session: each keeps the session's
transcript in memory and appends to it. So a session belongs to one owner at a time through the
claim on its row (``sessions.claim_owner``, ``claim_fence``). Every write of a session's rows
(the session, its messages, turns, queued prompts, compression attempts and lease) starts with
:meth:`Claims.hold` inside its transaction, which locks the session's row (so writers of one
session take turns, and positions and generations are counted without a race) and reads the
claim in the same statement: a writer that waited for the lock gets the row as the previous
writer committed it (PostgreSQL re-reads a locked row that changed), so two hosts taking a
session over at once cannot both win. Then it:

- takes the claim when nobody holds it, drawing a fresh fencing number from ``fences``;
- goes on when this owner holds it;
- takes it over, with a larger fencing number, when its owner is gone (its liveness says so);
- refuses with :class:`~agent.store.errors.StoreFenced` when a live owner holds it, or when the
  claim's fencing number is larger than the one this store last held: another host took the
  session over while this one was away, and whatever this one still has in memory is stale.

The fencing number is the technique of M. Kleppmann, "How to do distributed locking" (2016):
a holder that was presumed dead cannot undo its successor's work, because its writes carry an
older number and are refused.
"""

from __future__ import annotations

import threading
from collections.abc import Collection

from agent.store.errors import StoreFenced, StoreNotFound
from agent.store.liveness import OwnerLiveness
from agent.store.postgres.database import Cursor


class Claims:
    """This store's claims on sessions.

    Thread-safe.

    Args:
        owner: this store's owner string.
        liveness: whether another owner still runs.
        where: the database as messages name it.
    """

    def __init__(self, owner: str, liveness: OwnerLiveness, where: str) -> None:
        self.owner = owner
        self._liveness = liveness
        self._where = where
        self._lock = threading.Lock()
        self._held: dict[str, int] = {}

    def hold(
        self, cur: Cursor, session_id: str, *, gone: Collection[str] = (), force: bool = False
    ) -> int:
        """Lock the session's row and make sure this store may write it (inside the caller's
        transaction).

        Args:
            cur: a cursor inside a write transaction.
            session_id: the session about to be written.
            gone: owners the caller already knows are gone (crash recovery asked once).
            force: take the claim whoever holds it (recovery of live owners' turns, asked for
                with ``include_live``).

        Returns:
            the fencing number this store holds the session with.

        Raises:
            StoreNotFound: no such session.
            StoreFenced: another owner holds it and runs, or took it over from this store.
        """
        cur.execute(
            "SELECT claim_owner, claim_fence FROM sessions WHERE id = %s FOR NO KEY UPDATE",
            (session_id,),
        )
        row = cur.fetchone()
        if row is None:
            raise StoreNotFound(f"no session {session_id!r}", self._where)
        owner, fence = row
        with self._lock:
            mine = self._held.get(session_id)
        if owner == self.owner:
            self._remember(session_id, int(fence))
            return int(fence)
        if not force and mine is not None and fence > mine:
            # Taken over while this store was away, whether or not the new holder still
            # holds it: what this store has in memory is stale.
            raise StoreFenced(
                f"session {session_id} was taken over by {owner or 'another desk'}"
                f" (fence {fence} > {mine}): this desk's writes to it are refused",
                self._where,
                owner or "",
            )
        if owner is not None and not force and owner not in gone and self._liveness.is_alive(owner):
            raise StoreFenced(
                f"session {session_id} is live on {owner}: stop it there or wait for it",
                self._where,
                owner,
            )
        cur.execute(
            "UPDATE sessions SET claim_owner = %s, claim_fence = nextval('fences')"
            " WHERE id = %s RETURNING claim_fence",
            (self.owner, session_id),
        )
        taken = cur.fetchone()
        assert taken is not None
        self._remember(session_id, int(taken[0]))
        return int(taken[0])

    def fence_of(self, session_id: str) -> int | None:
        """The fencing number this store last held ``session_id`` with, or None."""
        with self._lock:
            return self._held.get(session_id)

    def adopt(self, session_id: str, fence: int) -> None:
        """Believe this store holds ``session_id`` with ``fence`` (a host that comes back with
        what it had in memory; tests use it to replay a late write)."""
        self._remember(session_id, fence)

    def forget(self, session_id: str) -> None:
        """The session was deleted: nothing is held of it any more."""
        with self._lock:
            self._held.pop(session_id, None)

    def held(self) -> list[str]:
        """Sessions this store holds (or held) claims on."""
        with self._lock:
            return list(self._held)

    def release(self, cur: Cursor, session_id: str) -> bool:
        """Give back this owner's claim on one session (it is live here no more).

        Returns:
            True when a claim was released.
        """
        with self._lock:
            self._held.pop(session_id, None)
        cur.execute(
            "UPDATE sessions SET claim_owner = NULL WHERE id = %s AND claim_owner = %s",
            (session_id, self.owner),
        )
        return cur.rowcount == 1

    def release_all(self, cur: Cursor) -> int:
        """Give back every claim of this store's owner that it took (a clean close).

        Returns:
            how many claims were released.
        """
        cur.execute(
            "UPDATE sessions SET claim_owner = NULL WHERE claim_owner = %s AND id = ANY(%s)",
            (self.owner, self.held()),
        )
        return cur.rowcount

    def _remember(self, session_id: str, fence: int) -> None:
        with self._lock:
            self._held[session_id] = fence
