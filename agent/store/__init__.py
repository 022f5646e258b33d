"""The durable session store: sessions, transcripts, turns, compression leases and attempts.

``SessionStore`` is the interface, made of one small interface per table group
(:mod:`agent.store.protocol`: ``store.sessions``, ``store.transcript``, ``store.turns``,
``store.queue``, ``store.leases``, ``store.compressions``); ``SqliteStore`` the embedded
implementation (:mod:`agent.store.sqlite`: standard library ``sqlite3``, WAL mode) at
:func:`default_db_path` unless ``--db PATH`` says otherwise, and ``PostgresStore``
(:mod:`agent.store.postgres`, psycopg 3) for several gateway hosts on one database
(``--db postgresql://...``; a :class:`SharedStore`), both opened by :func:`open_store`.
Owner liveness (which process owns an open turn, and whether it still runs) is an
:class:`OwnerLiveness` the store is given.
Every failure is a :class:`StoreError` with a one-line message; the gateway shows it and keeps
its in-memory transcript.
"""

from __future__ import annotations

from agent.store.calls import LOST_RESULT, SavedCall
from agent.store.errors import (
    StoreClosed,
    StoreCorrupt,
    StoreError,
    StoreFenced,
    StoreFull,
    StoreLocked,
    StoreNotFound,
    StoreReadOnly,
    StoreTooNew,
    StoreTransient,
    StoreUnreachable,
)
from agent.store.firing_row import FiringRow
from agent.store.liveness import LocalLiveness, OwnerLiveness, current_owner, owner_alive
from agent.store.opener import is_server_url, open_store, store_path
from agent.store.paths import default_db_path
from agent.store.protocol import (
    Checkpoints,
    Compressions,
    Firings,
    Leases,
    PromptQueue,
    Sessions,
    SessionStore,
    Transcript,
    Turns,
)
from agent.store.rows import (
    CRASH_EXIT_REASON,
    NOT_SENT_CRASH_ERROR,
    NOT_SENT_PREFIX,
    CheckpointRow,
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
from agent.store.shared import (
    EventLog,
    RunningTurn,
    SharedStore,
    StopKind,
    StopLetter,
    StopMail,
    StoredEvent,
    StoredReplay,
)
from agent.store.sqlite import SqliteStore
from agent.store.sqlite.schema import SCHEMA_VERSION
from agent.tokens import estimate_tokens

__all__ = [
    "LOST_RESULT",
    "SavedCall",
    "EventLog",
    "RunningTurn",
    "SharedStore",
    "StopKind",
    "StopLetter",
    "StopMail",
    "StoredEvent",
    "StoredReplay",
    "is_server_url",
    "CRASH_EXIT_REASON",
    "NOT_SENT_CRASH_ERROR",
    "NOT_SENT_PREFIX",
    "SCHEMA_VERSION",
    "CheckpointRow",
    "Checkpoints",
    "CompressionAttemptRow",
    "Compressions",
    "FiringRow",
    "Firings",
    "Cooldown",
    "LeaseRow",
    "Leases",
    "LocalLiveness",
    "MessageRow",
    "NewMessage",
    "OwnerLiveness",
    "PromptQueue",
    "QueuedPromptRow",
    "SessionRow",
    "SessionStore",
    "Sessions",
    "SqliteStore",
    "StoreClosed",
    "StoreCorrupt",
    "StoreError",
    "StoreFenced",
    "StoreFull",
    "StoreLocked",
    "StoreNotFound",
    "StoreReadOnly",
    "StoreTooNew",
    "StoreTransient",
    "StoreUnreachable",
    "Transcript",
    "TurnOutcome",
    "TurnRow",
    "Turns",
    "current_owner",
    "default_db_path",
    "estimate_tokens",
    "open_store",
    "owner_alive",
    "store_path",
    "turn_messages",
]
