"""The PostgreSQL session store (psycopg 3), for several hosts.

:class:`PostgresStore` (:mod:`~agent.store.postgres.store`) connects, migrates and closes; its
table groups are those of :mod:`agent.store.sql` (the interfaces of :mod:`agent.store.protocol`,
written once for both stores), run by :class:`PostgresEngine` (:mod:`~agent.store.postgres.engine`),
plus what several gateway hosts on one database share: hosts and their liveness
(:mod:`~agent.store.postgres.hosts`), session claims with fencing numbers
(:mod:`~agent.store.postgres.claims`), stop rows with ``NOTIFY``
(:mod:`~agent.store.postgres.stops`) and event numbers (:mod:`~agent.store.postgres.events`).
"""

from __future__ import annotations

from agent.store.postgres.engine import PostgresEngine
from agent.store.postgres.events import PostgresEvents
from agent.store.postgres.hosts import Host, HostLiveness
from agent.store.postgres.schema import SCHEMA_VERSION
from agent.store.postgres.stops import PostgresStops
from agent.store.postgres.store import PostgresStore

__all__ = [
    "SCHEMA_VERSION",
    "Host",
    "HostLiveness",
    "PostgresEngine",
    "PostgresEvents",
    "PostgresStops",
    "PostgresStore",
]
