"""Which desk holds each session live: the claim on its row (``sessions.claim_owner``,
``claim_fence``).

A gateway keeps a live session's transcript in memory and appends to it, so two processes with
one session live would interleave their prompts and replies. The rule is the PostgreSQL store's
(:mod:`agent.store.postgres.claims`): a session is claimed by one owner at a time; a gateway
claims it when it creates or resumes it and gives it back when it lets it go (eviction, close);
another owner takes it over only when the holder is provably gone (its
:class:`~agent.store.liveness.OwnerLiveness` says so: a crash, ``kill -9``), and then at once,
with a larger fencing number. Reading the claim and writing it are one ``BEGIN IMMEDIATE``
transaction, so two desks claiming at the same moment cannot both win.
"""

from __future__ import annotations

import threading

from agent.store.errors import StoreFenced, StoreNotFound
from agent.store.liveness import OwnerLiveness, refusal
from agent.store.sql.core import Tx
from agent.store.sqlite.connections import Connections


class SqliteClaims:
    """This store's claims on sessions. Thread-safe.

    Args:
        db: the store's connections.
        owner: this store's owner string.
        liveness: whether another owner still runs.
    """

    def __init__(self, db: Connections, owner: str, liveness: OwnerLiveness) -> None:
        self._db = db
        self._path = db.path
        self._owner = owner
        self._liveness = liveness
        self._lock = threading.Lock()
        self._held: set[str] = set()

    def claim(self, session_id: str) -> tuple[int, str | None]:
        """Take (or keep) the session's claim for this store's owner, in one transaction.

        Args:
            session_id: the session.

        Returns:
            the fencing number the claim holds now, and the owner it was taken over from (a
            gone one), or None.

        Raises:
            StoreNotFound: no such session.
            StoreFenced: another owner holds it and still runs (the message names the session
                and the holder's pid).
        """
        with self._db.write() as conn:
            row = conn.execute(
                "SELECT claim_owner, claim_fence FROM sessions WHERE id = ?", (session_id,)
            ).fetchone()
            if row is None:
                raise StoreNotFound(f"no session {session_id!r}", self._path)
            owner, fence = row[0], int(row[1])
            if owner == self._owner:
                self._remember(session_id)
                return fence, None
            if owner is not None and self._liveness.is_alive(owner):
                raise StoreFenced(refusal(session_id, owner), self._path, owner)
            fence += 1
            conn.execute(
                "UPDATE sessions SET claim_owner = ?, claim_fence = ? WHERE id = ?",
                (self._owner, fence, session_id),
            )
        self._remember(session_id)
        return fence, owner

    def take_new(self, tx: Tx, session_id: str) -> None:
        """Claim a session this store is creating (inside the caller's write transaction)."""
        tx.run(
            "UPDATE sessions SET claim_owner = ?, claim_fence = claim_fence + 1 WHERE id = ?",
            (self._owner, session_id),
        )
        self._remember(session_id)

    def release(self, session_id: str) -> bool:
        """Give the session's claim back, if this store's owner holds it.

        Returns:
            True when a claim was released.
        """
        with self._lock:
            self._held.discard(session_id)
        with self._db.write() as conn:
            cur = conn.execute(
                "UPDATE sessions SET claim_owner = NULL WHERE id = ? AND claim_owner = ?",
                (session_id, self._owner),
            )
            return cur.rowcount == 1

    def release_all(self) -> int:
        """Give back every claim this store took (a clean close), in one transaction.

        Returns:
            how many claims were released.
        """
        with self._lock:
            held, self._held = sorted(self._held), set()
        if not held:
            return 0
        with self._db.write() as conn:
            cur = conn.executemany(
                "UPDATE sessions SET claim_owner = NULL WHERE id = ? AND claim_owner = ?",
                [(sid, self._owner) for sid in held],
            )
            return cur.rowcount

    def forget(self, session_id: str) -> None:
        """The session was deleted: nothing is held of it any more."""
        with self._lock:
            self._held.discard(session_id)

    def _remember(self, session_id: str) -> None:
        with self._lock:
            self._held.add(session_id)
