"""Type checkers read this; at run time the face imports each name on first use."""

from __future__ import annotations

from agent.store.sqlite.compressions import (
    SqliteCompressions,
)
from agent.store.sqlite.leases import (
    SqliteLeases,
)
from agent.store.sqlite.queued import (
    SqliteQueue,
)
from agent.store.sqlite.sessions import (
    SqliteSessions,
)
from agent.store.sqlite.store import (
    SqliteStore,
)
from agent.store.sqlite.transcript import (
    SqliteTranscript,
)
from agent.store.sqlite.turns import (
    SqliteTurns,
)

__all__ = [
    "SqliteCompressions",
    "SqliteLeases",
    "SqliteQueue",
    "SqliteSessions",
    "SqliteStore",
    "SqliteTranscript",
    "SqliteTurns",
]
