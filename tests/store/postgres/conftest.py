"""Fixtures of the PostgreSQL store's own tests: stores acting as separate hosts on one schema,
and a proxy that can take the database away from one of them."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest

from agent.store.postgres import PostgresStore
from tests.pg_cluster import Cluster
from tests.pg_proxy import Proxy

OpenHost = Callable[..., PostgresStore]
"""Opens a store as one host: ``open_host("host-a:1:1", **PostgresStore options)``."""


@pytest.fixture
def schema(pg_cluster: Cluster) -> Iterator[str]:
    """A schema of its own for the test (dropped after)."""
    name = f"h_{uuid.uuid4().hex[:12]}"
    yield name
    with psycopg.connect(pg_cluster.url, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")


@pytest.fixture
def open_host(pg_cluster: Cluster, schema: str) -> Iterator[OpenHost]:
    """Opens stores on the test's schema, each as the host its owner string names; all are
    closed at the end. Pass ``url=`` to reach the cluster another way (through a proxy)."""
    opened: list[PostgresStore] = []

    def open_one(owner: str, **options: Any) -> PostgresStore:
        url = options.pop("url", pg_cluster.url)
        options.setdefault("reconnect_s", 10.0)
        store = PostgresStore(url, schema=schema, owner=owner, **options)
        opened.append(store)
        return store

    yield open_one
    for store in opened:
        store.close()


@pytest.fixture
def proxy(pg_cluster: Cluster) -> Iterator[Proxy]:
    """A proxy in front of the cluster (see :mod:`tests.pg_proxy`)."""
    p = Proxy(pg_cluster.port)
    yield p
    p.close()
