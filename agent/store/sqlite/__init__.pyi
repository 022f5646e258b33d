"""Type checkers read this; at run time the face imports each name on first use."""

from __future__ import annotations

from agent.store.sqlite.engine import (
    SqliteEngine,
)
from agent.store.sqlite.store import (
    SqliteStore,
)

__all__ = [
    "SqliteEngine",
    "SqliteStore",
]
