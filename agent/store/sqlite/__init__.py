"""The SQLite session store, one module per table group.

:class:`SqliteStore` (:mod:`~agent.store.sqlite.store`) opens, migrates and closes the file and
is made of :class:`SqliteSessions`, :class:`SqliteTranscript`, :class:`SqliteTurns`,
:class:`SqliteQueue`, :class:`SqliteLeases` and :class:`SqliteCompressions`, which share the
connections (:mod:`~agent.store.sqlite.connections`) and the plain helpers of
:mod:`~agent.store.sqlite.shared`.
"""

from __future__ import annotations

from agent.faces import lazy_names

__all__, __getattr__ = lazy_names(
    __name__,
    {
        "SqliteCompressions": "agent.store.sqlite.compressions",
        "SqliteLeases": "agent.store.sqlite.leases",
        "SqliteQueue": "agent.store.sqlite.queued",
        "SqliteSessions": "agent.store.sqlite.sessions",
        "SqliteStore": "agent.store.sqlite.store",
        "SqliteTranscript": "agent.store.sqlite.transcript",
        "SqliteTurns": "agent.store.sqlite.turns",
    },
)
