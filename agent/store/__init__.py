"""The durable session store: sessions, transcripts, turns, compression leases and attempts.

``SessionStore`` is the interface; ``SqliteStore`` the embedded implementation (standard
library ``sqlite3``, WAL mode) at :func:`default_db_path` unless ``--db PATH`` says otherwise.
Every failure is a :class:`StoreError` with a one-line message; the gateway shows it and keeps
its in-memory transcript.
"""

from __future__ import annotations

from agent.store.errors import (
    StoreClosed,
    StoreCorrupt,
    StoreError,
    StoreFull,
    StoreLocked,
    StoreNotFound,
    StoreReadOnly,
    StoreTooNew,
)
from agent.store.liveness import LocalLiveness, OwnerLiveness, current_owner, owner_alive
from agent.store.opener import open_store, store_path
from agent.store.paths import default_db_path
from agent.store.protocol import SessionStore
from agent.store.rows import (
    CRASH_EXIT_REASON,
    NOT_SENT_CRASH_ERROR,
    NOT_SENT_PREFIX,
    CompressionAttemptRow,
    Cooldown,
    LeaseRow,
    MessageRow,
    NewMessage,
    QueuedPromptRow,
    SessionRow,
    TurnOutcome,
    TurnRow,
    turn_messages,
)
from agent.store.schema import SCHEMA_VERSION
from agent.store.sqlite import SqliteStore
from agent.tokens import estimate_tokens

__all__ = [
    "CRASH_EXIT_REASON",
    "NOT_SENT_CRASH_ERROR",
    "NOT_SENT_PREFIX",
    "SCHEMA_VERSION",
    "CompressionAttemptRow",
    "Cooldown",
    "LeaseRow",
    "LocalLiveness",
    "MessageRow",
    "NewMessage",
    "OwnerLiveness",
    "QueuedPromptRow",
    "SessionRow",
    "SessionStore",
    "SqliteStore",
    "StoreClosed",
    "StoreCorrupt",
    "StoreError",
    "StoreFull",
    "StoreLocked",
    "StoreNotFound",
    "StoreReadOnly",
    "StoreTooNew",
    "TurnOutcome",
    "TurnRow",
    "current_owner",
    "default_db_path",
    "estimate_tokens",
    "open_store",
    "owner_alive",
    "store_path",
    "turn_messages",
]
