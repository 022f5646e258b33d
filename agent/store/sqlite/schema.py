"""The SQLite schema as forward migrations.

``MIGRATIONS[i]`` takes a database from ``PRAGMA user_version = i`` to ``i + 1``. Each step is a
tuple of single SQL statements, run in order inside one ``BEGIN IMMEDIATE`` transaction together
with the new ``user_version`` (SQLite DDL is transactional, so a step applies whole or not at
all). Steps are append-only: never edit a released step, add a new one.

Times are unix seconds (REAL); booleans are 0/1 integers.
"""

from __future__ import annotations

from agent.store.sql import schema as both

V1: tuple[str, ...] = (
    f"""
    CREATE TABLE sessions ({both.SESSION_KEY_COLUMNS}
        created_at  REAL NOT NULL,
        updated_at  REAL NOT NULL,
        last_error  TEXT
    )
    """,
    "CREATE INDEX sessions_updated ON sessions(updated_at DESC)",
    f"""
    CREATE TABLE turns ({both.TURN_KEY_COLUMNS}
        started_at        REAL NOT NULL,
        ended_at          REAL,{both.TURN_OUTCOME_COLUMNS}
        stop_closed_ms    REAL,
        stop_exited_ms    REAL,
        children_ended    INTEGER CHECK (children_ended IS NULL OR children_ended >= 0),
        error             TEXT,
        draft             TEXT,
        CHECK ((ended_at IS NULL) = (status = 'running')),
        CHECK (ended_at IS NULL OR exit_reason IS NOT NULL)
    )
    """,
    "CREATE INDEX turns_session ON turns(session_id, started_at)",
    "CREATE INDEX turns_open ON turns(id) WHERE ended_at IS NULL",
    """
    CREATE TABLE messages (
        id             INTEGER PRIMARY KEY,
        session_id     TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        position       INTEGER NOT NULL CHECK (position >= 0),
        role           TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
        content        TEXT NOT NULL,
        reasoning      TEXT,
        tool_calls     TEXT CHECK (tool_calls IS NULL OR json_valid(tool_calls)),
        tool_call_id   TEXT,
        token_estimate INTEGER NOT NULL DEFAULT 0,
        active         INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1)),
        partial        INTEGER NOT NULL DEFAULT 0 CHECK (partial IN (0, 1)),
        turn_id        TEXT REFERENCES turns(id) ON DELETE SET NULL,
        created_at     REAL NOT NULL,
        UNIQUE (session_id, position)
    )
    """,
    "CREATE INDEX messages_turn ON messages(turn_id) WHERE turn_id IS NOT NULL",
)
"""Version 1: sessions, turns and an append-only transcript."""

V2: tuple[str, ...] = (
    "ALTER TABLE sessions ADD COLUMN compression_cooldown_until REAL",
    "ALTER TABLE sessions ADD COLUMN compression_cooldown_step INTEGER NOT NULL DEFAULT 0",
    """
    CREATE TABLE compression_leases (
        session_id  TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
        holder      TEXT NOT NULL,
        acquired_at REAL NOT NULL,
        expires_at  REAL NOT NULL
    )
    """,
    """
    CREATE TABLE compression_attempts (
        id                 INTEGER PRIMARY KEY,
        session_id         TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        generation         INTEGER NOT NULL CHECK (generation >= 1),
        holder             TEXT NOT NULL,
        started_at         REAL NOT NULL,
        ended_at           REAL,
        phase              TEXT NOT NULL,
        outcome            TEXT,
        tokens_in          INTEGER,
        tokens_out         INTEGER,
        error              TEXT,
        summary_message_id INTEGER,
        UNIQUE (session_id, generation),
        CHECK ((ended_at IS NULL) = (outcome IS NULL))
    )
    """,
    "ALTER TABLE messages ADD COLUMN archived_by INTEGER"
    " REFERENCES compression_attempts(id) ON DELETE SET NULL",
    "ALTER TABLE messages ADD COLUMN order_key INTEGER NOT NULL DEFAULT 0",
    "UPDATE messages SET order_key = position",
    "CREATE INDEX messages_archived_by ON messages(archived_by) WHERE archived_by IS NOT NULL",
    # The active transcript is ordered by order_key, and no two active messages share a place.
    "CREATE UNIQUE INDEX messages_active_order ON messages(session_id, order_key) WHERE active = 1",
)
"""Version 2: compression (cooldown, leases, attempts, archiving, summaries in place)."""

V3: tuple[str, ...] = (
    """
    CREATE TABLE queued_prompts (
        turn_id     TEXT PRIMARY KEY,
        session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        prompt      TEXT NOT NULL,
        owner       TEXT NOT NULL DEFAULT '',
        queued_at   REAL NOT NULL
    )
    """,
    "CREATE INDEX queued_prompts_session ON queued_prompts(session_id, queued_at)",
)
"""Version 3: prompts waiting for their turn to start, so a crash or a quit cannot lose them."""

V4: tuple[str, ...] = both.CHILD_TURNS
"""Version 4: child agents' turns, under the turn that delegated them (``parent_turn_id``),
with their final reply kept on the row (their messages are not the session's transcript)."""

V5: tuple[str, ...] = (
    "ALTER TABLE sessions ADD COLUMN claim_owner TEXT",
    "ALTER TABLE sessions ADD COLUMN claim_fence INTEGER NOT NULL DEFAULT 0",
)
"""Version 5: which desk holds each session live (``claim_owner``, None: nobody) and the
number of times it was claimed (``claim_fence``), see :mod:`agent.store.sqlite.claims`."""

V6: tuple[str, ...] = (
    f"""
    CREATE TABLE checkpoint_files ({both.CHECKPOINT_KEY_COLUMNS}
        before_data BLOB,
        after_sha   TEXT,
        undone      INTEGER NOT NULL DEFAULT 0 CHECK (undone IN (0, 1)),
        created_at  REAL NOT NULL,
        PRIMARY KEY (turn_id, path)
    )
    """,
    "CREATE INDEX checkpoint_files_session ON checkpoint_files(session_id, step)",
)
"""Version 6: what each file held before a turn first changed it (``before_data``, NULL: no
file), and a hash of what it held after, so ``/undo`` can put it back and see whether it was
changed since; see :mod:`agent.store.sql.checkpoints`."""

V7: tuple[str, ...] = both.TURN_USAGE
"""Version 7: each turn's usage, every model request of it summed (prompt, completion and
cached tokens, and how many requests are desk's estimate); NULL for turns saved before."""

V8: tuple[str, ...] = (
    """
    CREATE TABLE schedule_firings (
        schedule    TEXT NOT NULL,
        due_at      REAL NOT NULL,
        owner       TEXT NOT NULL,
        claimed_at  REAL NOT NULL,
        session_id  TEXT,
        turn_id     TEXT,
        ended_at    REAL,
        outcome     TEXT,
        PRIMARY KEY (schedule, due_at),
        CHECK ((ended_at IS NULL) = (outcome IS NULL))
    )
    """,
    both.SCHEDULE_SESSIONS,
)
"""Version 8: the firings of schedules, one row per (schedule, due time), inserted by the
process that runs it; and the session each schedule's turns go to. See
:mod:`agent.store.sql.firings`."""

V9: tuple[str, ...] = both.TURN_MODEL_AND_CALLS
"""Version 9: the model each turn ran with (``turns.model``; a turn that starts with a model
also sets its session's ``model``, so a resumed session goes on with the model it last used),
and an open turn's tool calls, saved as each starts (``turns.calls``)."""

V10: tuple[str, ...] = both.TURN_FINISH_AND_DISMISSAL
"""Version 10: how the server ended each turn's reply (``turns.finish_reason``), and prompts
never sent that the person dismissed (``turns.dismissed``)."""

V11: tuple[str, ...] = (
    f"""
    CREATE TABLE transcript_events (
        id INTEGER PRIMARY KEY,{both.TRANSCRIPT_EVENT_COLUMNS}
        created_at      REAL NOT NULL
    )
    """,
    both.TRANSCRIPT_EVENTS_INDEX,
)
"""Version 11: the events a session showed among its messages (a compression's outcome
line), each after the message it followed, so a resumed session shows them again."""

V12: tuple[str, ...] = both.turn_stop_tool("REAL")
"""Version 12: the tool call a stop ended (its name, process group and how long it took to
go), so a resumed stop receipt names it."""

MIGRATIONS: tuple[tuple[str, ...], ...] = (V1, V2, V3, V4, V5, V6, V7, V8, V9, V10, V11, V12)
"""Every step, oldest first."""

SCHEMA_VERSION = len(MIGRATIONS)
"""The ``PRAGMA user_version`` of a current database."""
