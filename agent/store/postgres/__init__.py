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

from agent.store.postgres.compressions import PostgresCompressions
from agent.store.postgres.events import PostgresEvents
from agent.store.postgres.hosts import Host, HostLiveness
from agent.store.postgres.leases import PostgresLeases
from agent.store.postgres.queued import PostgresQueue
from agent.store.postgres.schema import SCHEMA_VERSION
from agent.store.postgres.sessions import PostgresSessions
from agent.store.postgres.stops import PostgresStops
from agent.store.postgres.store import PostgresStore
from agent.store.postgres.transcript import PostgresTranscript
from agent.store.postgres.turns import PostgresTurns

__all__ = [
    "SCHEMA_VERSION",
    "Host",
    "HostLiveness",
    "PostgresCompressions",
    "PostgresEvents",
    "PostgresLeases",
    "PostgresQueue",
    "PostgresSessions",
    "PostgresStops",
    "PostgresStore",
    "PostgresTranscript",
    "PostgresTurns",
]
