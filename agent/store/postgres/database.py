"""The connections of one PostgreSQL store: a pool, one transaction per call, waits, not drops.

Every mutation is one call of :meth:`Database.write`: a function run inside one transaction
(``BEGIN`` ... ``COMMIT``) on a connection of the pool, rolled back whole on any error. Reads
are :meth:`Database.read`, in autocommit. Two kinds of failure are waited out instead of being
passed up, so that "a store that is briefly unavailable delays writes, never drops them":

- the database cannot be reached (a restart, a lost network, a connection the server ended):
  the call retries with a growing pause (50 ms up to 1 s) until ``reconnect_s`` has passed, then
  raises :class:`~agent.store.errors.StoreUnreachable`;
- two transactions met in a deadlock or a serialization failure: the loser runs again.

A retried write runs its function again from the start, in a new transaction, so it never
applies half of itself. A connection lost during ``COMMIT`` leaves it unknown whether the first
try was saved; the writes of the table groups are guarded so that running them twice changes
nothing twice (a turn closes once, a queued row is taken once, a lease names its holder).

``psycopg`` exceptions never leave this module: :func:`translate` maps them to
:class:`~agent.store.errors.StoreError` with one line naming the database (its URL without the
password).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import errors as pg_errors
from psycopg_pool import ConnectionPool, PoolTimeout

from agent.store.errors import (
    StoreClosed,
    StoreError,
    StoreFull,
    StoreReadOnly,
    StoreUnreachable,
)
from agent.store.postgres.text import prepare

T = TypeVar("T")

Cursor = psycopg.Cursor[Any]
"""What a transaction's function gets: a cursor of the transaction's connection."""

CONNECT_TIMEOUT_S = 5
"""Seconds one connection attempt may take (libpq ``connect_timeout``)."""

_KEEPALIVES: dict[str, Any] = {
    # A database host that vanishes without closing its sockets is noticed within ~10 s.
    "keepalives": 1,
    "keepalives_idle": 5,
    "keepalives_interval": 2,
    "keepalives_count": 3,
}

_TRANSIENT_STATES = frozenset({"40001", "40P01", "57P01", "57P02", "57P03"})
"""SQLSTATEs worth running again: serialization failure, deadlock, the server shutting down or
starting."""


def display_url(url: str) -> str:
    """``url`` without its password, for messages (``postgresql://desk@host:5432/desk``)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username}@{host}" if parts.username else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def connection_kwargs(schema: str | None) -> dict[str, Any]:
    """Keyword arguments of every connection: keepalives, timeouts, the schema to use."""
    kwargs: dict[str, Any] = {"connect_timeout": CONNECT_TIMEOUT_S, **_KEEPALIVES}
    if schema is not None:
        kwargs["options"] = f"-c search_path={schema}"
    return kwargs


class _Stale(Exception):
    """A call failed on a pooled connection that turned out broken (ended by the server)."""


def _stale_or(exc: psycopg.OperationalError, conn: psycopg.Connection[Any]) -> BaseException:
    """``exc`` itself, or :class:`_Stale` when it came from a connection that is now broken
    and is worth running again at once on another."""
    return _Stale() if conn.broken and transient(exc) else exc


def transient(exc: BaseException) -> bool:
    """Whether ``exc`` is worth waiting out: the database could not be reached, or the
    transaction lost a deadlock or a serialization check."""
    if isinstance(exc, PoolTimeout):
        return True
    if not isinstance(exc, psycopg.OperationalError):
        return False
    state = getattr(exc, "sqlstate", None)
    return state is None or state.startswith("08") or state in _TRANSIENT_STATES


def translate(exc: BaseException, where: str) -> StoreError:
    """Map a ``psycopg`` (or pool) exception to the matching :class:`StoreError`, one line.

    Args:
        exc: what psycopg raised.
        where: the database as messages name it (:func:`display_url`).

    Returns:
        the typed error (never raises).
    """
    text = " ".join(str(exc).split()) or type(exc).__name__
    if transient(exc):
        return StoreUnreachable(f"cannot reach the session database {where} ({text})", where)
    if isinstance(exc, pg_errors.InsufficientPrivilege | pg_errors.ReadOnlySqlTransaction):
        return StoreReadOnly(f"the session database {where} refuses writes ({text})", where)
    if isinstance(exc, pg_errors.DiskFull):
        return StoreFull(f"no space left to write the session database {where}", where)
    return StoreError(f"session database {where}: {text}", where)


class Database:
    """A pool of connections to one PostgreSQL database (and schema).

    Args:
        url: the ``postgresql://`` URL (libpq connection string).
        schema: the schema to work in (created when missing), or None for the URL's
            ``search_path`` (``public`` by default).
        reconnect_s: how long a call waits for an unreachable database, in seconds, before
            :class:`StoreUnreachable`.
        max_size: most connections the pool opens.

    Raises:
        StoreUnreachable: the database cannot be reached now (one line: which, and why).
        StoreError: it refused the connection (authentication, no such database...).
    """

    def __init__(
        self,
        url: str,
        *,
        schema: str | None = None,
        reconnect_s: float = 30.0,
        max_size: int = 8,
    ) -> None:
        self.url = url
        self.where = display_url(url)
        self.schema = schema
        self.reconnect_s = reconnect_s
        self.kwargs = connection_kwargs(schema)
        self._closed = threading.Event()
        self.first = self._connect_first()
        """The first connection, made before the pool (so a refusal says why: the pool would only
        say "timeout"); the store migrates on it and keeps it as its host's lock connection."""
        self._pool = ConnectionPool(
            url,
            min_size=1,
            max_size=max_size,
            kwargs={"autocommit": True, **self.kwargs},
            open=False,
            configure=prepare,
            timeout=CONNECT_TIMEOUT_S,
            name="desk-store",
        )
        self._pool.open(wait=False)

    def _connect_first(self) -> psycopg.Connection[Any]:
        try:
            conn = psycopg.connect(self.url, autocommit=True, **self.kwargs)
        except psycopg.Error as exc:
            raise translate(exc, self.where) from None
        prepare(conn)
        try:
            if self.schema is not None:
                conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
        except psycopg.Error as exc:
            conn.close()
            raise translate(exc, self.where) from None
        return conn

    # -- use -----------------------------------------------------------------------------------

    def connect(self, *, autocommit: bool = True) -> psycopg.Connection[Any]:
        """A connection of its own, outside the pool (a listener's, a lock holder's).

        Raises:
            StoreError: it cannot be opened (translated).
        """
        self._check_open()
        try:
            conn = psycopg.connect(self.url, autocommit=autocommit, **self.kwargs)
        except psycopg.Error as exc:
            raise translate(exc, self.where) from None
        prepare(conn)
        return conn

    def write(self, fn: Callable[[Cursor], T], *, wait: bool = True) -> T:
        """Run ``fn`` inside one transaction; commit when it returns, roll back when it raises.

        Args:
            fn: the transaction's work; it may run more than once (see the module docstring),
                so it must not change anything outside the database.
            wait: False to give up at once (:class:`StoreUnreachable`) when no connection is
                free or the database is away, and to wait at most 50 ms for a row lock.

        Returns:
            what ``fn`` returned.

        Raises:
            StoreUnreachable: the database stayed away for ``reconnect_s`` (or at all, with
                ``wait=False``).
            StoreClosed: the store was closed.
            StoreError: anything ``fn`` raised of it, or any other failure (translated).
        """

        def attempt(timeout: float) -> T:
            with self._pool.connection(timeout=timeout) as conn:
                try:
                    with conn.transaction(), conn.cursor() as cur:
                        if not wait:
                            cur.execute("SET LOCAL lock_timeout = '50ms'")
                        return fn(cur)
                except psycopg.OperationalError as exc:
                    raise _stale_or(exc, conn) from exc

        return self._retrying(attempt, self.reconnect_s if wait else 0.0)

    def statement(self, fn: Callable[[Cursor], T]) -> T:
        """Run ``fn``'s one statement in autocommit: its own transaction, one round trip
        (no ``BEGIN`` and ``COMMIT`` of their own), waiting for a database that is away as
        :meth:`write` does.

        Raises:
            StoreUnreachable, StoreClosed, StoreError: as for :meth:`write`.
        """
        return self.read(fn, wait_s=self.reconnect_s)

    def read(self, fn: Callable[[Cursor], T], *, wait_s: float | None = None) -> T:
        """Run ``fn`` on a pooled connection in autocommit (each statement its own snapshot).

        Args:
            fn: the reads.
            wait_s: how long to wait for an unreachable database (default ``reconnect_s``).

        Raises:
            StoreUnreachable, StoreClosed, StoreError: as for :meth:`write`.
        """

        def attempt(timeout: float) -> T:
            with self._pool.connection(timeout=timeout) as conn:
                try:
                    with conn.cursor() as cur:
                        return fn(cur)
                except psycopg.OperationalError as exc:
                    raise _stale_or(exc, conn) from exc

        return self._retrying(attempt, self.reconnect_s if wait_s is None else wait_s)

    def _retrying(self, attempt: Callable[[float], T], bound_s: float) -> T:
        deadline = time.monotonic() + bound_s
        pause = 0.05
        stale = 0
        while True:
            self._check_open()
            left = deadline - time.monotonic()
            try:
                return attempt(max(0.05, min(left, CONNECT_TIMEOUT_S)))
            except StoreError:
                raise
            except _Stale:
                # A pooled connection the server had ended (a restart): the pool drops it;
                # the next one is tried at once, as many times as the pool may hold.
                stale += 1
                if stale <= self._pool.max_size:
                    continue
                if self._closed.wait(min(pause, max(0.0, deadline - time.monotonic()))):
                    continue
                if time.monotonic() >= deadline:
                    raise StoreUnreachable(
                        f"cannot reach the session database {self.where} (connection lost)",
                        self.where,
                    ) from None
            except (psycopg.Error, PoolTimeout) as exc:
                if self._closed.is_set():
                    raise StoreClosed(
                        f"the session database {self.where} is closed", self.where
                    ) from None
                left = deadline - time.monotonic()
                if not transient(exc) or left <= 0:
                    raise translate(exc, self.where) from None
                if self._closed.wait(min(pause, left)):
                    continue  # closed while waiting: _check_open raises
                pause = min(pause * 2, 1.0)

    def _check_open(self) -> None:
        if self._closed.is_set():
            raise StoreClosed(f"the session database {self.where} is closed", self.where)

    @property
    def closed(self) -> bool:
        """True once :meth:`close` ran."""
        return self._closed.is_set()

    def close(self) -> None:
        """Close the pool (idempotent); a call waiting for the database gives up at once."""
        if self._closed.is_set():
            return
        self._closed.set()
        self.first.close()
        self._pool.close(timeout=CONNECT_TIMEOUT_S)
