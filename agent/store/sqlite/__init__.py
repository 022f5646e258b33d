"""The SQLite session store, one module per table group.

:class:`SqliteStore` (:mod:`~agent.store.sqlite.store`) opens, migrates and closes the file and
is made of :class:`SqliteSessions`, :class:`SqliteTranscript`, :class:`SqliteTurns`,
:class:`SqliteQueue`, :class:`SqliteLeases` and :class:`SqliteCompressions`, which share the
connections (:mod:`~agent.store.sqlite.connections`) and the plain helpers of
:mod:`~agent.store.sqlite.shared`.
"""

from __future__ import annotations

from agent.store.sqlite.compressions import SqliteCompressions
from agent.store.sqlite.leases import SqliteLeases
from agent.store.sqlite.queued import SqliteQueue
from agent.store.sqlite.sessions import SqliteSessions
from agent.store.sqlite.store import SqliteStore
from agent.store.sqlite.transcript import SqliteTranscript
from agent.store.sqlite.turns import SqliteTurns

__all__ = [
    "SqliteCompressions",
    "SqliteLeases",
    "SqliteQueue",
    "SqliteSessions",
    "SqliteStore",
    "SqliteTranscript",
    "SqliteTurns",
]
