"""The PostgreSQL session store: the same interfaces as SQLite, for several gateway hosts.

One database (and schema) holds sessions, transcripts, turns and compression state, exactly as
the SQLite store does (:mod:`agent.store.sqlite.store`), and passes the same conformance suite
(``tests/store``). What several hosts on one database need comes on top:

- every host is a row of ``hosts`` with a lease its heartbeat renews and an advisory lock that
  PostgreSQL frees when the host's connection dies (:mod:`~agent.store.postgres.hosts`); that
  is the owner liveness, not the hostname;
- every session is claimed by one host with a fencing number, and every write of its rows
  checks the claim (:mod:`~agent.store.postgres.claims`);
- a stop for a turn on another host is a row plus ``NOTIFY`` (:attr:`PostgresStore.stops`);
- event numbers come from the database, and events are kept for a resume on another host
  (:attr:`PostgresStore.events`).

Every mutation is one transaction on a pooled connection; a database that is away delays the
call (up to ``reconnect_s``) instead of failing it (:mod:`~agent.store.postgres.database`).
"""

from __future__ import annotations

import contextlib
import time
from contextlib import AbstractContextManager
from typing import Final

from agent.store.errors import StoreError
from agent.store.liveness import OwnerLiveness
from agent.store.postgres.claims import Claims
from agent.store.postgres.database import Cursor, Database
from agent.store.postgres.engine import PostgresEngine
from agent.store.postgres.events import PostgresEvents
from agent.store.postgres.hosts import Host, HostLiveness
from agent.store.postgres.schema import migrate, read_version
from agent.store.postgres.stops import RECHECK_S, PostgresStops
from agent.store.sql.core import Clock, Core
from agent.store.sql.tables import SqlTables

FORGET_EVERY_S = 60.0
"""Seconds between two deletions of long-gone hosts' rows by a sweeping store."""


class PostgresStore(SqlTables):
    """Sessions, transcripts, turns, queued prompts and compression state in PostgreSQL.

    Thread-safe. Made of one object per table group (:attr:`sessions`, :attr:`transcript`,
    :attr:`turns`, :attr:`queue`, :attr:`leases`, :attr:`compressions`, see
    :class:`~agent.store.protocol.SessionStore`), plus :attr:`stops` and :attr:`events` for
    several hosts. Opening connects (one clear line when it cannot), migrates under an advisory
    lock, registers this host and, unless ``recover=False``, recovers what owners that are gone
    left open; with ``sweep_s`` the heartbeat thread keeps recovering (another host killed
    mid-turn has its turns closed within its lease bound).

    Args:
        url: ``postgresql://user[:password]@host[:port]/dbname`` (any libpq URL).
        schema: the schema to work in (created when missing), or None for the URL's default.
        clock: wall-clock source in unix seconds, for row times and compression leases.
        liveness: this store's owner identity and the rule for others; default
            :class:`~agent.store.postgres.hosts.HostLiveness`.
        owner: the owner string of the default liveness (default: this process's,
            :func:`~agent.store.liveness.current_owner`); two stores of one process that act
            as two hosts (tests, benchmarks) give two.
        recover: run crash recovery on open.
        reconnect_s: how long a call waits for a database that is away, in seconds.
        host_ttl_s: this host's lease, in seconds: how long after another host's own outage
            (or after its last beat, while its lock is held by a connection the server has not
            found dead) this host may take to come back and still count as running.
        heartbeat_s: seconds between two renewals of the lease.
        grace_s: how long after its last beat a host whose lock is free still counts as
            running, in seconds.
        sweep_s: run crash recovery after the heartbeats, at most every ``sweep_s`` seconds
            (None: only on open).
        max_connections: the pool's size.
        stop_recheck_s: seconds between two looks for stop rows without a notification.

    Raises:
        StoreUnreachable: the database cannot be reached (one line: where and why).
        StoreTooNew: it was written by a newer desk.
        StoreError: any other failure to open (authentication, no such database...).
    """

    def __init__(
        self,
        url: str,
        *,
        schema: str | None = None,
        clock: Clock = time.time,
        liveness: OwnerLiveness | None = None,
        owner: str | None = None,
        recover: bool = True,
        reconnect_s: float = 30.0,
        host_ttl_s: float = 10.0,
        heartbeat_s: float = 1.0,
        grace_s: float = 2.0,
        sweep_s: float | None = None,
        max_connections: int = 8,
        stop_recheck_s: float = RECHECK_S,
    ) -> None:
        self._db = Database(url, schema=schema, reconnect_s=reconnect_s, max_size=max_connections)
        self.where = self._db.where
        self._host: Host | None = None
        try:
            live = liveness or HostLiveness(self._db, owner, grace_s=grace_s)
            self._owner = live.owner
            first = self._db.first
            with first.transaction(), first.cursor() as cur:
                migrate(cur, self.where)
                left = recover and self._anything_left(cur)
            claims = Claims(self._owner, live, self.where)
            self._claims = claims
            engine = PostgresEngine(self._db, claims, self._owner)
            super().__init__(Core(engine, self.where, clock, self._owner, live))
            self.stops: Final = PostgresStops(
                self._db, self._owner, _channel(schema), stop_recheck_s, live
            )
            self.events: Final = PostgresEvents(self._db)
            self._host = Host(
                self._db,
                self._owner,
                ttl_s=host_ttl_s,
                heartbeat_s=heartbeat_s,
                grace_s=grace_s,
                conn=first,
            )
            if isinstance(live, HostLiveness):
                live.watch(self._host)
            if left:
                self.recover()
            self._last_sweep = self._last_forget = time.monotonic()
            self._sweep_s = sweep_s
            self._host.start(self._sweep if recover and sweep_s is not None else None)
        except BaseException:
            self._close_parts()
            raise

    # -- lifecycle -----------------------------------------------------------------------------

    def recover(self) -> tuple[list[str], list[str], list[int]]:
        """Close what owners that are gone left open: their turns (drafts kept,
        ``failed(Crash)``), then their queued prompts, then compressions without a lease.

        Returns:
            the turns closed, the queued prompts closed, the attempts ended.
        """
        if not self._db.read(self._anything_left):
            return [], [], []
        turns = self.turns.recover_open_turns()
        queued = self.queue.recover_queued_prompts()  # after: a queue waits for its open turn
        attempts = self.compressions.recover_abandoned_compressions()
        return turns, queued, attempts

    def _anything_left(self, cur: Cursor) -> bool:
        """Whether another owner left a turn open or a prompt queued, or an attempt is open."""
        owner = self._owner
        cur.execute(
            "SELECT EXISTS (SELECT 1 FROM turns WHERE ended_at IS NULL AND owner <> %s)"
            " OR EXISTS (SELECT 1 FROM queued_prompts WHERE owner <> %s)"
            " OR EXISTS (SELECT 1 FROM compression_attempts WHERE ended_at IS NULL)",
            (owner, owner),
        )
        row = cur.fetchone()
        return bool(row and row[0])

    def _sweep(self) -> None:
        if self._sweep_s is None or time.monotonic() - self._last_sweep < self._sweep_s:
            return
        self._last_sweep = now = time.monotonic()
        self.recover()
        if self._host is not None and now - self._last_forget >= FORGET_EVERY_S:
            self._last_forget = now
            self._db.write(self._host.forget_gone_hosts)

    def sync_after(self) -> AbstractContextManager[None]:
        """Nothing to defer: the server makes each commit durable on its own side."""
        return contextlib.nullcontext()

    def defer_sync(self) -> None:
        """Nothing to defer: the server makes each commit durable on its own side."""

    def close(self) -> None:
        """Give back this store's session claims, end its host row (freeing its lock) and close
        the pool (idempotent). Later calls raise ``StoreClosed``."""
        if self._db.closed:
            return
        self.stops.close()
        if self._claims.held():
            with contextlib.suppress(StoreError):  # away: the claims go with this host's lease
                self._db.write(self._claims.release_all, wait=False)
        self._close_parts()

    def _close_parts(self) -> None:
        if self._host is not None:
            self._host.close()
        self._db.close()

    @property
    def host(self) -> Host:
        """This store's registration (its lock key, lease and heartbeat)."""
        assert self._host is not None
        return self._host

    @property
    def claims(self) -> Claims:
        """The sessions this store holds, with their fencing numbers."""
        return self._claims

    def schema_version(self) -> int:
        """The ``desk_schema`` version of the database."""
        return self._db.read(read_version)

    def claim_session(self, session_id: str) -> int:
        """Take (or keep) the session's claim for this host now, in one transaction.

        The caller reads the session anew from the database after this (a resume), so a
        fencing number this store held before is not stale memory here: it is forgotten.

        Returns:
            the fencing number.

        Raises:
            StoreNotFound: no such session.
            StoreFenced: a live host holds it.
        """

        def tx(cur: Cursor) -> int:
            self._claims.forget(session_id)
            return self._claims.hold(cur, session_id)

        return self._db.write(tx)

    def release_session(self, session_id: str) -> None:
        """Give the session's claim back (it is live on this host no more), in one
        transaction; nothing when this host does not hold it."""

        def tx(cur: Cursor) -> bool:
            return self._claims.release(cur, session_id)

        self._db.write(tx)


def _channel(schema: str | None) -> str:
    """The ``NOTIFY`` channel of the stores of one schema."""
    return "desk_stops" if schema is None else f"desk_stops_{schema}"[:63]
