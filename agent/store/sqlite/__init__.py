"""The SQLite session store.

:class:`SqliteStore` (:mod:`~agent.store.sqlite.store`) opens, migrates and closes the file; its
table groups are those of :mod:`agent.store.sql`, run by :class:`SqliteEngine`
(:mod:`~agent.store.sqlite.engine`) on the file's connections
(:mod:`~agent.store.sqlite.connections`); a session is live in one desk at a time through its
claim (:mod:`~agent.store.sqlite.claims`).
"""

from __future__ import annotations

from agent.faces import lazy_names

__all__, __getattr__ = lazy_names(
    __name__,
    {
        "SqliteEngine": "agent.store.sqlite.engine",
        "SqliteStore": "agent.store.sqlite.store",
    },
)
