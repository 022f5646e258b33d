"""Hosts on one PostgreSQL database: each open store registers, holds a lock, beats a heart.

Every :class:`~agent.store.postgres.PostgresStore` is one row of ``hosts`` (:class:`Host`): its
owner string (``host:pid:start``, :func:`agent.store.liveness.current_owner`), a lease that
expires on the database's clock (so the hosts' own clocks may disagree) and the key of a
session-level advisory lock it holds on a connection of its own. A thread renews the lease
every ``heartbeat_s`` seconds on that connection, re-taking the lock when the connection had
to be made again, and (when asked) runs crash recovery after each beat.

:class:`HostLiveness` is the :class:`~agent.store.liveness.OwnerLiveness` of such stores, not
the hostname. The rule: **a live host keeps its turns through an outage of any length; only a
host that is really gone is recovered as a crash.** An owner runs while one of its rows

- holds its advisory lock (however old its lease: the lease's expiry is not a death
  certificate; a host whose beats stopped while the server still holds its connection, say a
  frozen database or a frozen host, keeps its claims), or
- beat within ``grace_s``, or
- is within its own lease (``ttl_s``) of the judging host's return: a judge that lost the
  database itself (its heartbeat had to reconnect, or a beat came late) gives every other host
  the length of that host's lease, counted from the judge's first beat back, to connect again
  and take its lock back, since an outage frees every lock at once.

So a host is gone when its lock was released by the server and not taken again: a process
killed with ``kill -9`` loses its connections, PostgreSQL frees its lock at once, and it is gone
``grace_s`` after its last beat. A host cut off from the database without its socket closing
loses its lock when the server's TCP keepalives (set on the lock connection: about 11 s) find
the connection dead. A row with no lock, an old beat and a lease over an hour old is deleted.
A host also waits ``grace_s`` after its own reconnection before it recovers anyone's turns.
"""

from __future__ import annotations

import logging
import math
import os
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg

from agent.store.errors import StoreError
from agent.store.liveness import current_owner
from agent.store.postgres.database import Cursor, Database

_LOCK_HELD = (
    "EXISTS (SELECT 1 FROM pg_locks AS l WHERE l.locktype = 'advisory' AND l.granted"
    " AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())"
    " AND l.classid = hashtext(current_schema())::oid AND l.objid = h.lock_key::oid"
    " AND l.objsubid = 2)"
)
"""SQL: the host row ``h`` has its advisory lock held (the two-key form: schema, lock key)."""

_log = logging.getLogger(__name__)

_FOREVER_S = 1e9
"""Seconds that stand for "always" in SQL intervals (a host that never lost the database)."""

_SERVER_KEEPALIVES = (
    "SELECT set_config('tcp_keepalives_idle', '5', false),"
    " set_config('tcp_keepalives_interval', '2', false),"
    " set_config('tcp_keepalives_count', '3', false)"
)
"""SQL: the server probes the lock connection, so a host cut off without its socket closing
loses its lock within ~11 s (the server's default waits two hours)."""


class HostLiveness:
    """Liveness of the owners of stores on one database (an
    :class:`~agent.store.liveness.OwnerLiveness`).

    Args:
        db: the database.
        owner: this process's owner string (default :func:`current_owner`).
        grace_s: how long after its last beat an owner without its lock still counts as
            running, in seconds.
    """

    def __init__(self, db: Database, owner: str | None = None, *, grace_s: float = 2.0) -> None:
        self._db = db
        self._owner = owner if owner is not None else current_owner()
        self.grace_s = grace_s
        self._host: Host | None = None

    @property
    def owner(self) -> str:
        """This process's owner string."""
        return self._owner

    def watch(self, host: Host) -> None:
        """Judge others from ``host``'s point of view: while its own heartbeat has been back
        for less than another host's lease since an outage, that host still counts as running
        (it may not have connected again yet)."""
        self._host = host

    def is_alive(self, owner: str) -> bool:
        """Whether a store of ``owner`` still runs on this database (see the module docstring).

        Returns:
            True when it may still run; True as well when the database cannot be asked within
            2 s (a row of an owner that might run is never taken from it on a guess). Never
            raises.
        """
        host = self._host
        settled_s = min(host.settled_s() if host is not None else math.inf, _FOREVER_S)

        def q(cur: Cursor) -> bool:
            cur.execute(
                "SELECT EXISTS (SELECT 1 FROM hosts AS h WHERE h.owner = %s AND ("
                f"{_LOCK_HELD}"
                " OR h.heartbeat_at > clock_timestamp() - make_interval(secs => %s)"
                " OR h.expires_at - h.heartbeat_at > make_interval(secs => %s)))",
                (owner, self.grace_s, settled_s),
            )
            row = cur.fetchone()
            return bool(row and row[0])

        try:
            return self._db.read(q, wait_s=2.0)
        except StoreError:
            return True


class Host:
    """This store's row of ``hosts``, its advisory lock and its heartbeat thread.

    Args:
        db: the database.
        owner: the owner string to register.
        conn: a connection to register on and keep (default: a new one).
        ttl_s: the lease, in seconds: how long a host that lost the database itself gives this
            one, from its own return, to connect again before it may judge it gone (an
            expired lease alone is no death: see the module docstring).
        heartbeat_s: seconds between two beats.
        grace_s: seconds to wait after (re)connecting before ``sweep`` runs.

    Raises:
        StoreError: the row or the lock cannot be taken (translated).
    """

    def __init__(
        self,
        db: Database,
        owner: str,
        *,
        ttl_s: float = 10.0,
        heartbeat_s: float = 1.0,
        grace_s: float = 2.0,
        conn: psycopg.Connection[Any] | None = None,
    ) -> None:
        if heartbeat_s >= ttl_s:
            raise ValueError("the heartbeat must beat more often than the lease expires")
        self._db = db
        self.owner = owner
        self.ttl_s = ttl_s
        self.heartbeat_s = heartbeat_s
        self.grace_s = grace_s
        self._closing = threading.Event()
        self._thread: threading.Thread | None = None
        self._sweep: Callable[[], object] | None = None
        self._conn: psycopg.Connection[Any] | None = None
        self.lock_key = 0
        self._connected_at = 0.0
        self._last_beat = time.monotonic()
        self._steady_since = -math.inf
        self.beats = 0
        """Heartbeats written so far (tests wait on it)."""
        self._register(conn)

    def _register(self, given: psycopg.Connection[Any] | None = None) -> None:
        """Connect, insert (or keep) this host's row and take its advisory lock."""
        conn = given if given is not None else self._db.connect()
        try:
            with conn.cursor() as cur:
                if self.lock_key:
                    cur.execute(
                        "UPDATE hosts SET heartbeat_at = clock_timestamp(),"
                        " expires_at = clock_timestamp() + make_interval(secs => %s)"
                        " WHERE lock_key = %s",
                        (self.ttl_s, self.lock_key),
                    )
                if not self.lock_key or cur.rowcount != 1:  # new, or declared gone meanwhile
                    cur.execute(
                        "INSERT INTO hosts (owner, hostname, pid, expires_at) VALUES"
                        " (%s, %s, %s, clock_timestamp() + make_interval(secs => %s))"
                        " RETURNING lock_key",
                        (self.owner, socket.gethostname(), os.getpid(), self.ttl_s),
                    )
                    row = cur.fetchone()
                    assert row is not None
                    self.lock_key = int(row[0])
                cur.execute(
                    "SELECT pg_advisory_lock(hashtext(current_schema()), %s)", (self.lock_key,)
                )
                cur.execute(_SERVER_KEEPALIVES)
        except psycopg.Error:
            conn.close()
            raise
        old, self._conn = self._conn, conn
        if old is not None:
            old.close()
        self._connected_at = time.monotonic()

    def start(self, sweep: Callable[[], object] | None = None) -> None:
        """Start the heartbeat thread; ``sweep`` (crash recovery) runs after each beat once
        ``grace_s`` has passed since the last (re)connection."""
        self._sweep = sweep
        self._thread = threading.Thread(target=self._beat_loop, name="desk-heartbeat", daemon=True)
        self._thread.start()

    def _beat_loop(self) -> None:
        while not self._closing.wait(self.heartbeat_s):
            try:
                self.beat()
            except (psycopg.Error, StoreError):
                continue  # the database is away: try again at the next beat
            except Exception as exc:  # the heartbeat outlives what it did not expect
                _log.warning("desk heartbeat: beat failed (%s: %s)", type(exc).__name__, exc)
                continue
            sweep = self._sweep
            if sweep is not None and time.monotonic() - self._connected_at >= self.grace_s:
                try:
                    sweep()
                except StoreError:
                    pass
                except Exception as exc:
                    _log.warning("desk heartbeat: sweep failed (%s: %s)", type(exc).__name__, exc)
                # A slow sweep is not a late beat: the next gap counts from here.
                self._last_beat = time.monotonic()

    def beat(self) -> None:
        """Renew the lease now (reconnecting and re-taking the lock when needed).

        A beat that had to reconnect, or that comes more than ``heartbeat_s + grace_s`` after
        the previous one, starts a new steady stretch (:meth:`settled_s`).

        Raises:
            psycopg.Error, StoreError: the database cannot be reached.
        """
        conn = self._conn
        again = conn is None or conn.closed or conn.broken
        if again:
            self._register()
        else:
            assert conn is not None
            try:
                cur = conn.execute(
                    "UPDATE hosts SET heartbeat_at = clock_timestamp(),"
                    " expires_at = clock_timestamp() + make_interval(secs => %s)"
                    " WHERE lock_key = %s",
                    (self.ttl_s, self.lock_key),
                )
                if cur.rowcount != 1:  # a host that found this one gone deleted its row
                    self._register()
            except psycopg.OperationalError:
                again = True
                self._register()
        now = time.monotonic()
        if again or now - self._last_beat > self.heartbeat_s + self.grace_s:
            self._steady_since = now
        self._last_beat = now
        self.beats += 1

    def settled_s(self) -> float:
        """Seconds this host has beaten without a break since it last lost the database
        (``math.inf`` when it never lost it since it opened)."""
        return time.monotonic() - self._steady_since

    def close(self) -> None:
        """Stop the heartbeat, delete this host's row and free its lock (best effort)."""
        self._closing.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5.0)
        conn, self._conn = self._conn, None
        if conn is None:
            return
        try:
            if not conn.broken:
                conn.execute("DELETE FROM hosts WHERE lock_key = %s", (self.lock_key,))
        except psycopg.Error:
            pass  # the row expires on its own
        finally:
            conn.close()

    def forget_gone_hosts(self, cur: Cursor, older_than_s: float = 3600.0) -> int:
        """Delete the rows of hosts whose lease expired over ``older_than_s`` seconds ago and
        whose lock nobody holds (a host that holds it runs, however old its lease).

        Returns:
            how many rows were deleted.
        """
        cur.execute(
            "DELETE FROM hosts AS h"
            " WHERE h.expires_at < clock_timestamp() - make_interval(secs => %s)"
            f" AND NOT {_LOCK_HELD}",
            (older_than_s,),
        )
        return cur.rowcount
