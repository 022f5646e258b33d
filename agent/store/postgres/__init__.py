"""The PostgreSQL session store (psycopg 3), one module per table group, for several hosts.

:class:`PostgresStore` (:mod:`~agent.store.postgres.store`) connects, migrates and closes, and is
made of :class:`PostgresSessions`, :class:`PostgresTranscript`, :class:`PostgresTurns`,
:class:`PostgresQueue`, :class:`PostgresLeases` and :class:`PostgresCompressions` (the interfaces
of :mod:`agent.store.protocol`, as SQLite implements them) plus what several gateway hosts on
one database share: hosts and their liveness (:mod:`~agent.store.postgres.hosts`), session
claims with fencing numbers (:mod:`~agent.store.postgres.claims`), stop rows with ``NOTIFY``
(:mod:`~agent.store.postgres.stops`) and event numbers (:mod:`~agent.store.postgres.events`).
"""

from __future__ import annotations

from agent.faces import lazy_names

__all__, __getattr__ = lazy_names(
    __name__,
    {
        "Host": "agent.store.postgres.hosts",
        "HostLiveness": "agent.store.postgres.hosts",
        "PostgresCompressions": "agent.store.postgres.compressions",
        "PostgresEvents": "agent.store.postgres.events",
        "PostgresLeases": "agent.store.postgres.leases",
        "PostgresQueue": "agent.store.postgres.queued",
        "PostgresSessions": "agent.store.postgres.sessions",
        "PostgresStops": "agent.store.postgres.stops",
        "PostgresStore": "agent.store.postgres.store",
        "PostgresTranscript": "agent.store.postgres.transcript",
        "PostgresTurns": "agent.store.postgres.turns",
        "SCHEMA_VERSION": "agent.store.postgres.schema",
    },
)
