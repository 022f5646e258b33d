"""Fixtures of the store tests: stores of every backend from one factory, a hand-driven clock and
owner liveness the test decides.

The modules of ``tests/store`` are a conformance suite: they take their stores from
:func:`store_factory` only and use nothing but the interfaces of :mod:`agent.store.protocol`,
so each runs once per backend in :data:`BACKENDS`: SQLite (a file per test) and PostgreSQL (a
schema per test in the session's throwaway cluster, :func:`tests.conftest.pg_cluster`). What
only one backend has is tested beside: SQLite's file, WAL mode, migrations, locks and SIGKILL
durability in ``tests/store/sqlite``; PostgreSQL's hosts, claims, stop rows and reconnection in
``tests/store/postgres``.
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import psycopg
import pytest

from agent.store import (
    SCHEMA_VERSION,
    OwnerLiveness,
    SessionStore,
    SqliteStore,
    current_owner,
    owner_alive,
)
from agent.store.postgres import SCHEMA_VERSION as POSTGRES_SCHEMA_VERSION
from agent.store.postgres import PostgresStore
from agent.store.sqlite.connections import Synchronous
from tests.pg_cluster import Cluster

BACKENDS = ["sqlite", "postgres"]
"""The store backends every conformance test runs against."""


class FakeClock:
    """A wall clock the test moves by hand (unix seconds)."""

    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        """Move the clock forward by ``seconds``."""
        self.now += seconds


@dataclass(frozen=True)
class ScriptedLiveness:
    """Owner liveness chosen by the test: this store's owner string, and which owners run.

    Attributes:
        owner: the owner string the store writes (default: this process's real one).
        alive: answers whether another owner still runs (default: the real ``/proc`` check).
    """

    owner: str = field(default_factory=current_owner)
    alive: Callable[[str], bool] = owner_alive

    def is_alive(self, owner: str) -> bool:
        return self.alive(owner)


class StoreFactory(Protocol):
    """Opens stores of one backend on one database of its own, and closes them all at the end.

    Attributes:
        backend: the backend's name, one of :data:`BACKENDS`.
        clock: the clock of every store it opens (the test moves it).
        schema_version: the schema version of a current database of this backend.
    """

    backend: str
    clock: FakeClock
    schema_version: int

    def __call__(
        self, *, liveness: OwnerLiveness | None = None, recover: bool = True
    ) -> SessionStore:
        """Open one more store on the factory's database, as a desk starting on it would.

        Args:
            liveness: the store's owner identity and liveness rule (default: the real one).
            recover: run crash recovery on open.
        """
        ...

    def fresh(self) -> StoreFactory:
        """A factory of the same backend on a new, empty database with a clock of its own: for
        property tests, whose many examples share one test's fixtures. Its ``close`` also
        removes that database."""
        ...

    def close(self) -> None:
        """Close every store this factory opened (a store closed already stays closed)."""
        ...


class SqliteFactory:
    """:class:`StoreFactory` of :class:`SqliteStore`, on one file.

    Args:
        path: the database file (its folder is created by the first store).
        clock: the stores' clock.
        synchronous: the stores' SQLite ``synchronous`` mode.
        owns: a folder :meth:`close` removes, or None.
    """

    backend = "sqlite"
    schema_version = SCHEMA_VERSION

    def __init__(
        self,
        path: Path,
        clock: FakeClock,
        *,
        synchronous: Synchronous = "FULL",
        owns: Path | None = None,
    ) -> None:
        self.path = path
        self.clock = clock
        self._synchronous: Synchronous = synchronous
        self._owns = owns
        self._opened: list[SqliteStore] = []

    def __call__(
        self, *, liveness: OwnerLiveness | None = None, recover: bool = True
    ) -> SqliteStore:
        store = SqliteStore(
            self.path,
            clock=self.clock,
            synchronous=self._synchronous,
            liveness=liveness,
            recover=recover,
        )
        self._opened.append(store)
        return store

    def fresh(self) -> SqliteFactory:
        # Many short examples: they test the store's logic, not durability across power loss,
        # so their commits skip the fsync.
        folder = Path(tempfile.mkdtemp(prefix="desk-store-"))
        return SqliteFactory(folder / "desk.db", FakeClock(), synchronous="NORMAL", owns=folder)

    def close(self) -> None:
        for store in self._opened:
            store.close()
        self._opened.clear()
        if self._owns is not None:
            shutil.rmtree(self._owns, ignore_errors=True)


_EMPTY_SCHEMAS: dict[str, list[str]] = {}
"""Migrated schemas emptied after a test, by cluster URL: the next factory takes one instead of
creating and migrating its own (a hundred property-test examples each want a fresh database)."""

_ADMIN: dict[str, psycopg.Connection[Any]] = {}
"""This process's connection to each cluster for emptying schemas (one, not one a test: a
connection is a server process started, about 8 ms of its CPU)."""


def admin_connection(url: str) -> psycopg.Connection[Any]:
    """This process's autocommit connection to ``url`` (made again when it was lost)."""
    conn = _ADMIN.get(url)
    if conn is None or conn.closed or conn.broken:
        conn = _ADMIN[url] = psycopg.connect(url, autocommit=True)
    return conn


_EMPTY_TABLES = """
SELECT quote_ident(schemaname) || '.' || quote_ident(tablename)
FROM pg_tables WHERE schemaname = %s AND tablename <> 'desk_schema'
"""
"""Every table of a schema but its version's, to be emptied."""

_RESTART_SEQUENCES = """
SELECT setval(quote_ident(schemaname) || '.' || quote_ident(sequencename), start_value, false)
FROM pg_sequences WHERE schemaname = %s
"""
"""Every sequence of a schema (identities and the fences) back at its start."""


def empty_schema(conn: psycopg.Connection[Any], schema: str) -> None:
    """Empty every table of a migrated ``schema`` and restart its sequences, in one transaction:
    what ``TRUNCATE ... RESTART IDENTITY`` does, at a hundredth of the server's CPU (a
    truncation makes each table and index a new file: about 0.1 s a schema, paid by every
    test and every property example on PostgreSQL). The foreign keys are not checked meanwhile
    (every row goes)."""
    with conn.transaction():
        conn.execute("SET LOCAL session_replication_role = replica")
        for (table,) in conn.execute(_EMPTY_TABLES, (schema,)).fetchall():
            conn.execute(f"DELETE FROM {table}")
        conn.execute(_RESTART_SEQUENCES, (schema,))


class PostgresFactory:
    """:class:`StoreFactory` of :class:`PostgresStore`, on one schema of its own in the test
    session's cluster (emptied by :meth:`close`, then given to a later factory).

    Args:
        url: the cluster's database URL.
        clock: the stores' clock.
    """

    backend = "postgres"
    schema_version = POSTGRES_SCHEMA_VERSION

    def __init__(self, url: str, clock: FakeClock) -> None:
        self.url = url
        self.clock = clock
        empty = _EMPTY_SCHEMAS.setdefault(url, [])
        self.schema = empty.pop() if empty else f"t_{uuid.uuid4().hex[:12]}"
        self._opened: list[PostgresStore] = []

    def __call__(
        self, *, liveness: OwnerLiveness | None = None, recover: bool = True
    ) -> PostgresStore:
        store = PostgresStore(
            self.url,
            schema=self.schema,
            clock=self.clock,
            liveness=liveness,
            recover=recover,
            reconnect_s=10.0,
            max_connections=4,
        )
        self._opened.append(store)
        return store

    def fresh(self) -> PostgresFactory:
        return PostgresFactory(self.url, FakeClock())

    def close(self) -> None:
        for store in self._opened:
            store.close()
        self._opened.clear()
        try:
            reused = self._give_back(admin_connection(self.url))
        except psycopg.OperationalError:  # its connection was lost (a test ended backends)
            _ADMIN.pop(self.url, None)
            reused = self._give_back(admin_connection(self.url))
        if reused:
            _EMPTY_SCHEMAS.setdefault(self.url, []).append(self.schema)

    def _give_back(self, conn: psycopg.Connection[Any]) -> bool:
        """Empty the schema for a later factory (True), or drop it when it was never
        migrated (False)."""
        migrated = conn.execute(
            "SELECT to_regclass(%s) IS NOT NULL", (f"{self.schema}.session_events",)
        ).fetchone()
        if migrated is None or not migrated[0]:
            conn.execute(f"DROP SCHEMA IF EXISTS {self.schema} CASCADE")
            return False
        empty_schema(conn, self.schema)
        return True


def _factory(
    request: pytest.FixtureRequest, backend: str, db_path: Path, clock: FakeClock
) -> StoreFactory:
    if backend == "sqlite":
        return SqliteFactory(db_path, clock)
    if backend == "postgres":
        cluster: Cluster = request.getfixturevalue("pg_cluster")
        return PostgresFactory(cluster.url, clock)
    raise AssertionError(f"no store factory for the backend {backend!r}")


@pytest.fixture(scope="session", autouse=True)
def admin_connections_closed() -> Iterator[None]:
    """The connections of :func:`admin_connection` are closed when the session ends."""
    yield
    for conn in _ADMIN.values():
        conn.close()
    _ADMIN.clear()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """A not-yet-existing database file in a fresh folder."""
    return tmp_path / "data" / "desk.db"


@pytest.fixture
def clock() -> FakeClock:
    """A clock at a fixed time."""
    return FakeClock()


@pytest.fixture(params=BACKENDS)
def store_factory(
    request: pytest.FixtureRequest, db_path: Path, clock: FakeClock
) -> Iterator[StoreFactory]:
    """Opens stores of one backend (each test runs once per backend) with the fake clock."""
    factory = _factory(request, request.param, db_path, clock)
    try:
        yield factory
    finally:
        factory.close()


@pytest.fixture
def store(store_factory: StoreFactory) -> SessionStore:
    """A store from :func:`store_factory` (closed at the end of the test)."""
    return store_factory()
