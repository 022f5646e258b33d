"""Type checkers read this; at run time the face imports each name on first use."""

from __future__ import annotations

from agent.store.postgres.compressions import (
    PostgresCompressions,
)
from agent.store.postgres.events import (
    PostgresEvents,
)
from agent.store.postgres.hosts import (
    Host,
    HostLiveness,
)
from agent.store.postgres.leases import (
    PostgresLeases,
)
from agent.store.postgres.queued import (
    PostgresQueue,
)
from agent.store.postgres.schema import (
    SCHEMA_VERSION,
)
from agent.store.postgres.sessions import (
    PostgresSessions,
)
from agent.store.postgres.stops import (
    PostgresStops,
)
from agent.store.postgres.store import (
    PostgresStore,
)
from agent.store.postgres.transcript import (
    PostgresTranscript,
)
from agent.store.postgres.turns import (
    PostgresTurns,
)

__all__ = [
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
    "SCHEMA_VERSION",
]
