"""The SQLite session store.

:class:`SqliteStore` (:mod:`~agent.store.sqlite.store`) opens, migrates and closes the file; its
table groups are those of :mod:`agent.store.sql`, run by :class:`SqliteEngine`
(:mod:`~agent.store.sqlite.engine`) on the file's connections
(:mod:`~agent.store.sqlite.connections`); a session is live in one desk at a time through its
claim (:mod:`~agent.store.sqlite.claims`).
"""

from __future__ import annotations

from agent.store.sqlite.engine import SqliteEngine
from agent.store.sqlite.store import SqliteStore

__all__ = ["SqliteEngine", "SqliteStore"]
