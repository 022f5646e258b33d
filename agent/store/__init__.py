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

from agent.faces import lazy_names

__all__, __getattr__ = lazy_names(
    __name__,
    {
        "CRASH_EXIT_REASON": "agent.store.rows",
        "CheckpointRow": "agent.store.rows",
        "Checkpoints": "agent.store.protocol",
        "CompressionAttemptRow": "agent.store.rows",
        "Compressions": "agent.store.protocol",
        "Cooldown": "agent.store.rows",
        "EventLog": "agent.store.shared",
        "FiringRow": "agent.store.firing_row",
        "Firings": "agent.store.protocol",
        "LOST_RESULT": "agent.store.calls",
        "NOT_ANSWERED": "agent.store.calls",
        "LeaseRow": "agent.store.rows",
        "Leases": "agent.store.protocol",
        "LocalLiveness": "agent.store.liveness",
        "MessageRow": "agent.store.rows",
        "NOT_SENT_CRASH_ERROR": "agent.store.rows",
        "NOT_SENT_PREFIX": "agent.store.rows",
        "NewMessage": "agent.store.rows",
        "OwnerLiveness": "agent.store.liveness",
        "PromptQueue": "agent.store.protocol",
        "QueuedPromptRow": "agent.store.rows",
        "RunningTurn": "agent.store.shared",
        "SCHEMA_VERSION": "agent.store.sqlite.schema",
        "SavedCall": "agent.store.calls",
        "SessionRow": "agent.store.rows",
        "SessionStore": "agent.store.protocol",
        "Sessions": "agent.store.protocol",
        "SharedStore": "agent.store.shared",
        "SqliteStore": "agent.store.sqlite",
        "StopKind": "agent.store.shared",
        "StopLetter": "agent.store.shared",
        "StopMail": "agent.store.shared",
        "StoreClosed": "agent.store.errors",
        "StoreCorrupt": "agent.store.errors",
        "StoreError": "agent.store.errors",
        "StoreFenced": "agent.store.errors",
        "StoreFull": "agent.store.errors",
        "StoreLocked": "agent.store.errors",
        "StoreNotFound": "agent.store.errors",
        "StoreReadOnly": "agent.store.errors",
        "StoreTooNew": "agent.store.errors",
        "StoreTransient": "agent.store.errors",
        "StoreUnreachable": "agent.store.errors",
        "StoredEvent": "agent.store.shared",
        "StoredReplay": "agent.store.shared",
        "Messages": "agent.store.protocol",
        "TranscriptEventRow": "agent.store.event_row",
        "TurnOutcome": "agent.store.rows",
        "TurnRow": "agent.store.rows",
        "Turns": "agent.store.protocol",
        "current_owner": "agent.store.liveness",
        "default_db_path": "agent.store.paths",
        "estimate_tokens": "agent.tokens",
        "is_server_url": "agent.store.paths",
        "open_store": "agent.store.opener",
        "owner_alive": "agent.store.liveness",
        "store_path": "agent.store.paths",
        "turn_messages": "agent.store.rows",
    },
)
