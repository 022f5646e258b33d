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

from agent.faces import lazy_names

__all__, __getattr__ = lazy_names(
    __name__,
    {
        "Host": "agent.store.postgres.hosts",
        "HostLiveness": "agent.store.postgres.hosts",
        "PostgresEngine": "agent.store.postgres.engine",
        "PostgresEvents": "agent.store.postgres.events",
        "PostgresStops": "agent.store.postgres.stops",
        "PostgresStore": "agent.store.postgres.store",
        "SCHEMA_VERSION": "agent.store.postgres.schema",
    },
)
