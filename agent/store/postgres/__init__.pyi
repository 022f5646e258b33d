"""Type checkers read this; at run time the face imports each name on first use."""

from __future__ import annotations

from agent.store.postgres.engine import (
    PostgresEngine,
)
from agent.store.postgres.events import (
    PostgresEvents,
)
from agent.store.postgres.hosts import (
    Host,
    HostLiveness,
)
from agent.store.postgres.schema import (
    SCHEMA_VERSION,
)
from agent.store.postgres.stops import (
    PostgresStops,
)
from agent.store.postgres.store import (
    PostgresStore,
)

__all__ = [
    "Host",
    "HostLiveness",
    "PostgresEngine",
    "PostgresEvents",
    "PostgresStops",
    "PostgresStore",
    "SCHEMA_VERSION",
]
