"""The PostgreSQL schema as forward migrations, and the one function that applies them.

``MIGRATIONS[i]`` takes a database from schema version ``i`` to ``i + 1`` (the version is the one
row of ``desk_schema``). Each step is a tuple of statements run in order inside one transaction
with the new version (PostgreSQL DDL is transactional, so a step applies whole or not at all),
under a transaction-level advisory lock, so two hosts starting together migrate once. Steps are
append-only: never edit a released step, add a new one.

The tables mirror the SQLite store's (:mod:`agent.store.sqlite.schema`: times are unix seconds,
``DOUBLE PRECISION``; flags are ``BOOLEAN``; an identity column keeps insertion order where
SQLite uses its ``rowid``), plus what several hosts need:

- ``hosts``: one row per open store (a gateway process): its owner string, the key of the
  session-level advisory lock it holds while it runs, and a lease (``expires_at``, the
  database's clock) its heartbeat renews;
- ``sessions.claim_owner`` and ``claim_fence``: which owner holds each session's live state,
  with a fencing number from the ``fences`` sequence (a takeover draws a larger one, and a
  write with an older one is refused); on the session's own row, so a writer that waited for
  the row's lock reads the claim as the previous writer left it;
- ``stop_requests``: stops sent to a turn on another host (a durable row, announced with
  ``NOTIFY``), taken once;
- ``session_events``: the events published for each session, numbered per session from
  ``sessions.event_seq`` (see :mod:`agent.store.postgres.events`).
"""

from __future__ import annotations

from agent.store.errors import StoreTooNew
from agent.store.postgres.database import Cursor
from agent.store.sql import schema as both

V1: tuple[str, ...] = (
    f"""
    CREATE TABLE sessions ({both.SESSION_KEY_COLUMNS}
        created_at                 DOUBLE PRECISION NOT NULL,
        updated_at                 DOUBLE PRECISION NOT NULL,
        last_error                 TEXT,
        compression_cooldown_until DOUBLE PRECISION,
        compression_cooldown_step  INTEGER NOT NULL DEFAULT 0,
        event_seq                  BIGINT NOT NULL DEFAULT 0,
        events_dropped_through     BIGINT NOT NULL DEFAULT 0,
        claim_owner                TEXT,
        claim_fence                BIGINT NOT NULL DEFAULT 0,
        created_order              BIGINT GENERATED ALWAYS AS IDENTITY
    )
    """,
    "CREATE INDEX sessions_updated ON sessions(updated_at DESC, created_order DESC)",
    f"""
    CREATE TABLE turns ({both.TURN_KEY_COLUMNS}
        fence             BIGINT NOT NULL DEFAULT 0,
        started_at        DOUBLE PRECISION NOT NULL,
        ended_at          DOUBLE PRECISION,{both.TURN_OUTCOME_COLUMNS}
        stop_closed_ms    DOUBLE PRECISION,
        stop_exited_ms    DOUBLE PRECISION,
        children_ended    INTEGER CHECK (children_ended IS NULL OR children_ended >= 0),
        error             TEXT,
        draft             TEXT,
        started_order     BIGINT GENERATED ALWAYS AS IDENTITY,
        CHECK ((ended_at IS NULL) = (status = 'running')),
        CHECK (ended_at IS NULL OR exit_reason IS NOT NULL)
    )
    """,
    "CREATE INDEX turns_session ON turns(session_id, started_at, started_order)",
    "CREATE INDEX turns_open ON turns(started_at, started_order) WHERE ended_at IS NULL",
    """
    CREATE TABLE compression_attempts (
        id                 BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        session_id         TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        generation         INTEGER NOT NULL CHECK (generation >= 1),
        holder             TEXT NOT NULL,
        started_at         DOUBLE PRECISION NOT NULL,
        ended_at           DOUBLE PRECISION,
        phase              TEXT NOT NULL,
        outcome            TEXT,
        tokens_in          INTEGER,
        tokens_out         INTEGER,
        error              TEXT,
        summary_message_id BIGINT,
        UNIQUE (session_id, generation),
        CHECK ((ended_at IS NULL) = (outcome IS NULL))
    )
    """,
    """
    CREATE TABLE messages (
        id             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        session_id     TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        position       INTEGER NOT NULL CHECK (position >= 0),
        order_key      INTEGER NOT NULL,
        role           TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
        content        TEXT NOT NULL,
        reasoning      TEXT,
        tool_calls     TEXT CHECK (tool_calls IS NULL OR tool_calls::jsonb IS NOT NULL),
        tool_call_id   TEXT,
        token_estimate INTEGER NOT NULL DEFAULT 0,
        active         BOOLEAN NOT NULL DEFAULT TRUE,
        archived_by    BIGINT REFERENCES compression_attempts(id) ON DELETE SET NULL,
        partial        BOOLEAN NOT NULL DEFAULT FALSE,
        turn_id        TEXT REFERENCES turns(id) ON DELETE SET NULL,
        created_at     DOUBLE PRECISION NOT NULL,
        UNIQUE (session_id, position)
    )
    """,
    "CREATE INDEX messages_turn ON messages(turn_id) WHERE turn_id IS NOT NULL",
    "CREATE INDEX messages_archived_by ON messages(archived_by) WHERE archived_by IS NOT NULL",
    "CREATE UNIQUE INDEX messages_active_order ON messages(session_id, order_key) WHERE active",
    """
    CREATE TABLE compression_leases (
        session_id  TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
        holder      TEXT NOT NULL,
        acquired_at DOUBLE PRECISION NOT NULL,
        expires_at  DOUBLE PRECISION NOT NULL
    )
    """,
    """
    CREATE TABLE queued_prompts (
        turn_id      TEXT PRIMARY KEY,
        session_id   TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        prompt       TEXT NOT NULL,
        owner        TEXT NOT NULL DEFAULT '',
        queued_at    DOUBLE PRECISION NOT NULL,
        queued_order BIGINT GENERATED ALWAYS AS IDENTITY
    )
    """,
    "CREATE INDEX queued_prompts_session ON queued_prompts(session_id, queued_at, queued_order)",
    """
    CREATE TABLE hosts (
        lock_key     INTEGER GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        owner        TEXT NOT NULL,
        hostname     TEXT NOT NULL,
        pid          INTEGER NOT NULL,
        started_at   TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
        heartbeat_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
        expires_at   TIMESTAMPTZ NOT NULL
    )
    """,
    "CREATE INDEX hosts_owner ON hosts(owner)",
    "CREATE SEQUENCE fences",
    "CREATE INDEX sessions_claim_owner ON sessions(claim_owner) WHERE claim_owner IS NOT NULL",
    """
    CREATE TABLE stop_requests (
        id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        session_id   TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        turn_id      TEXT,
        target       TEXT NOT NULL,
        kind         TEXT NOT NULL CHECK (kind IN ('turn', 'compression')),
        issuer       TEXT NOT NULL CHECK (issuer IN ('user', 'system')),
        surface      TEXT NOT NULL,
        reason       TEXT NOT NULL,
        sent_by      TEXT NOT NULL,
        requested_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
        taken_at     TIMESTAMPTZ,
        taken_by     TEXT,
        CHECK ((taken_at IS NULL) = (taken_by IS NULL))
    )
    """,
    "CREATE INDEX stop_requests_pending ON stop_requests(target, id) WHERE taken_at IS NULL",
    """
    CREATE TABLE session_events (
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        seq        BIGINT NOT NULL CHECK (seq >= 1),
        type       TEXT NOT NULL,
        params     TEXT NOT NULL,
        PRIMARY KEY (session_id, seq)
    )
    """,
)
"""Version 1: what SQLite's versions 1-3 hold, plus hosts, claims, stop rows and events."""

V2: tuple[str, ...] = both.CHILD_TURNS
"""Version 2 (SQLite's version 4): child agents' turns, under the turn that delegated them
(``parent_turn_id``), with their final reply kept on the row."""

V3: tuple[str, ...] = (
    f"""
    CREATE TABLE checkpoint_files ({both.CHECKPOINT_KEY_COLUMNS}
        before_data BYTEA,
        after_sha   TEXT,
        undone      BOOLEAN NOT NULL DEFAULT FALSE,
        created_at  DOUBLE PRECISION NOT NULL,
        recorded    BIGINT GENERATED ALWAYS AS IDENTITY,
        PRIMARY KEY (turn_id, path)
    )
    """,
    "CREATE INDEX checkpoint_files_session ON checkpoint_files(session_id, step, recorded)",
)
"""Version 3 (SQLite's version 6): what each file held before a turn first changed it, for
``/undo``; see :mod:`agent.store.sql.checkpoints`."""

V4: tuple[str, ...] = both.TURN_USAGE
"""Version 4 (SQLite's version 7): each turn's usage, every model request of it summed."""

V5: tuple[str, ...] = (
    """
    CREATE TABLE schedule_firings (
        schedule    TEXT NOT NULL,
        due_at      DOUBLE PRECISION NOT NULL,
        owner       TEXT NOT NULL,
        claimed_at  DOUBLE PRECISION NOT NULL,
        session_id  TEXT,
        turn_id     TEXT,
        ended_at    DOUBLE PRECISION,
        outcome     TEXT,
        PRIMARY KEY (schedule, due_at),
        CHECK ((ended_at IS NULL) = (outcome IS NULL))
    )
    """,
    both.SCHEDULE_SESSIONS,
)
"""Version 5 (SQLite's version 8): the firings of schedules, one row per (schedule, due
time), inserted by the one host that runs it; see :mod:`agent.store.sql.firings`."""

V6: tuple[str, ...] = both.TURN_MODEL_AND_CALLS
"""Version 6 (SQLite's version 9): the model each turn ran with, an open turn's tool calls."""

V7: tuple[str, ...] = both.TURN_FINISH_AND_DISMISSAL
"""Version 7 (SQLite's version 10): how the server ended each turn's reply, and prompts never
sent that the person dismissed."""

V8: tuple[str, ...] = (
    f"""
    CREATE TABLE transcript_events (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,{both.TRANSCRIPT_EVENT_COLUMNS}
        created_at      DOUBLE PRECISION NOT NULL
    )
    """,
    both.TRANSCRIPT_EVENTS_INDEX,
)
"""Version 8 (SQLite's version 11): the events a session showed among its messages."""

V9: tuple[str, ...] = both.turn_stop_tool("DOUBLE PRECISION")
"""Version 9 (SQLite's version 12): the tool call a stop ended, for a resumed stop receipt."""

MIGRATIONS: tuple[tuple[str, ...], ...] = (V1, V2, V3, V4, V5, V6, V7, V8, V9)
"""Every step, oldest first."""

SCHEMA_VERSION = len(MIGRATIONS)
"""The ``desk_schema.version`` of a current database."""

_MIGRATION_LOCK = 0
"""Second key of the advisory lock held while migrating (the first is the schema's hash;
host locks draw their keys from 1 up)."""


def read_version(cur: Cursor) -> int:
    """The schema version of the database (0 when it has no desk tables yet)."""
    cur.execute("SELECT to_regclass('desk_schema') IS NOT NULL")
    row = cur.fetchone()
    if row is None or not row[0]:
        return 0
    cur.execute("SELECT version FROM desk_schema")
    found = cur.fetchone()
    return 0 if found is None else int(found[0])


def migrate(cur: Cursor, where: str) -> int:
    """Bring the database to :data:`SCHEMA_VERSION`, inside the caller's transaction.

    Args:
        cur: a cursor inside a write transaction.
        where: the database as messages name it.

    Returns:
        the version now.

    Raises:
        StoreTooNew: the database was made by a newer desk (nothing is changed).
    """
    if read_version(cur) == SCHEMA_VERSION:
        return SCHEMA_VERSION  # the common case: nothing to lock
    cur.execute("SELECT pg_advisory_xact_lock(hashtext(current_schema()), %s)", (_MIGRATION_LOCK,))
    version = read_version(cur)  # another host may have migrated while we waited
    if version > SCHEMA_VERSION:
        raise StoreTooNew(
            f"the session database {where} was written by a newer desk "
            f"(schema {version}; this desk knows up to {SCHEMA_VERSION})",
            where,
        )
    if version == 0:
        cur.execute("CREATE TABLE desk_schema (version INTEGER NOT NULL)")
        cur.execute("INSERT INTO desk_schema (version) VALUES (0)")
    while version < SCHEMA_VERSION:
        for statement in MIGRATIONS[version]:
            cur.execute(statement)
        version += 1
    cur.execute("UPDATE desk_schema SET version = %s", (version,))
    return version
