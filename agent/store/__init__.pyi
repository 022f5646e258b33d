"""Type checkers read this; at run time the face imports each name on first use."""

from __future__ import annotations

from agent.store.calls import (
    LOST_RESULT,
    NOT_ANSWERED,
    SavedCall,
)
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
from agent.store.event_row import (
    TranscriptEventRow,
)
from agent.store.firing_row import (
    FiringRow,
)
from agent.store.liveness import (
    LocalLiveness,
    OwnerLiveness,
    current_owner,
    owner_alive,
)
from agent.store.opener import (
    open_store,
)
from agent.store.paths import (
    default_db_path,
    is_server_url,
    store_path,
)
from agent.store.protocol import (
    Checkpoints,
    Compressions,
    Firings,
    Leases,
    Messages,
    PromptQueue,
    Sessions,
    SessionStore,
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
from agent.store.sqlite import (
    SqliteStore,
)
from agent.store.sqlite.schema import (
    SCHEMA_VERSION,
)
from agent.tokens import (
    estimate_tokens,
)

__all__ = [
    "CRASH_EXIT_REASON",
    "CheckpointRow",
    "Checkpoints",
    "CompressionAttemptRow",
    "Compressions",
    "Cooldown",
    "EventLog",
    "FiringRow",
    "Firings",
    "LOST_RESULT",
    "LeaseRow",
    "Leases",
    "LocalLiveness",
    "MessageRow",
    "NOT_ANSWERED",
    "NOT_SENT_CRASH_ERROR",
    "NOT_SENT_PREFIX",
    "NewMessage",
    "OwnerLiveness",
    "PromptQueue",
    "QueuedPromptRow",
    "RunningTurn",
    "SCHEMA_VERSION",
    "SavedCall",
    "SessionRow",
    "SessionStore",
    "Sessions",
    "SharedStore",
    "SqliteStore",
    "StopKind",
    "StopLetter",
    "StopMail",
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
    "StoredEvent",
    "StoredReplay",
    "Messages",
    "TranscriptEventRow",
    "TurnOutcome",
    "TurnRow",
    "Turns",
    "current_owner",
    "default_db_path",
    "estimate_tokens",
    "is_server_url",
    "open_store",
    "owner_alive",
    "store_path",
    "turn_messages",
]
