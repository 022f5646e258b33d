"""Shared fixtures: the project's own model server on loopback, a throwaway PostgreSQL cluster,
and thread bookkeeping."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import psycopg
import pytest

from agent.provider.client import ProviderConfig
from demo_model.config import DemoConfig
from demo_model.server import DemoModelServer
from tests.pg_cluster import REQUIRE_ENV, Cluster, NoPostgres, start_cluster


@pytest.fixture
def demo_server() -> Iterator[DemoModelServer]:
    """A fresh demo model server (one slot, fast tokens) for one test."""
    server = DemoModelServer(DemoConfig(tokens_per_second=400.0))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def provider(demo_server: DemoModelServer) -> ProviderConfig:
    """Provider settings pointing at ``demo_server``."""
    return ProviderConfig(base_url=demo_server.base_url, model=demo_server.config.model)


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Cluster]:
    """A PostgreSQL cluster of its own for the whole test session (see :mod:`tests.pg_cluster`).

    Without the server binaries its tests skip, with the reason; with ``DESK_REQUIRE_POSTGRES=1``
    (CI) they fail instead, so a CI machine without PostgreSQL can never pass them unseen.
    """
    try:
        cluster = start_cluster()
    except NoPostgres as exc:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{exc} ({REQUIRE_ENV}=1)")
        pytest.skip(str(exc))
    try:
        yield cluster
    finally:
        cluster.remove()


@pytest.fixture
def pg_database(pg_cluster: Cluster) -> Iterator[str]:
    """The URL of a new, empty database of :func:`pg_cluster`, dropped after the test."""
    name = f"desk_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(pg_cluster.url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    try:
        yield pg_cluster.url_of(name)
    finally:
        with psycopg.connect(pg_cluster.url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
