"""Migration steps both stores take with the same text (SQLite's and PostgreSQL's versions are
numbered apart: PostgreSQL's version 1 holds what SQLite's versions 1-3 do).

Each is a tuple of single SQL statements; a backend's ``MIGRATIONS`` names it as one of its
steps. A step, once released, never changes.
"""

from __future__ import annotations

SESSION_KEY_COLUMNS = """
        id          TEXT PRIMARY KEY,
        title       TEXT NOT NULL DEFAULT '',
        model       TEXT NOT NULL DEFAULT '',
        cwd         TEXT NOT NULL DEFAULT '',"""
"""The first columns of ``sessions`` (both stores' version 1), spelled alike in both."""

TURN_KEY_COLUMNS = """
        id                TEXT PRIMARY KEY,
        session_id        TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        prompt            TEXT NOT NULL,
        owner             TEXT NOT NULL DEFAULT '',"""
"""The first columns of ``turns`` (both stores' version 1), spelled alike in both."""

TURN_OUTCOME_COLUMNS = """
        status            TEXT NOT NULL DEFAULT 'running',
        exit_reason       TEXT,
        stop_issuer       TEXT CHECK (stop_issuer IS NULL OR stop_issuer IN ('user', 'system')),
        stop_surface      TEXT,
        stop_reason       TEXT,
        prompt_tokens     INTEGER,
        completion_tokens INTEGER,"""
"""The outcome columns of ``turns`` (both stores' version 1), spelled alike in both."""

SCHEDULE_SESSIONS = """
    CREATE TABLE schedule_sessions (
        schedule    TEXT PRIMARY KEY,
        session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE
    )
    """
"""The session each schedule runs its turns in (SQLite's version 8, PostgreSQL's version 5),
spelled alike in both."""

CHILD_TURNS: tuple[str, ...] = (
    "ALTER TABLE turns ADD COLUMN parent_turn_id TEXT REFERENCES turns(id) ON DELETE CASCADE",
    "ALTER TABLE turns ADD COLUMN reply TEXT",
    "CREATE INDEX turns_parent ON turns(parent_turn_id) WHERE parent_turn_id IS NOT NULL",
)
"""Child agents' turns, under the turn that delegated them (``parent_turn_id``), with their
final reply kept on the row (their messages are not the session's transcript): SQLite's
version 4, PostgreSQL's version 2."""

CHECKPOINT_KEY_COLUMNS = """
        session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        turn_id     TEXT NOT NULL,
        step        INTEGER NOT NULL CHECK (step >= 1),
        path        TEXT NOT NULL,"""
"""The first columns of ``checkpoint_files`` (SQLite's version 6, PostgreSQL's version 3),
spelled alike in both; the rest differ in their types."""

TURN_USAGE: tuple[str, ...] = (
    "ALTER TABLE turns ADD COLUMN usage_requests INTEGER",
    "ALTER TABLE turns ADD COLUMN usage_prompt INTEGER",
    "ALTER TABLE turns ADD COLUMN usage_completion INTEGER",
    "ALTER TABLE turns ADD COLUMN usage_cached INTEGER",
    "ALTER TABLE turns ADD COLUMN usage_estimated INTEGER",
)
"""Each turn's usage, every model request of it summed (prompt, completion and cached tokens,
and how many requests are desk's estimate); NULL for turns saved before: SQLite's version 7,
PostgreSQL's version 4."""

TURN_MODEL_AND_CALLS: tuple[str, ...] = (
    "ALTER TABLE turns ADD COLUMN model TEXT",
    "ALTER TABLE turns ADD COLUMN calls TEXT",
)
"""The model each turn ran with (NULL for turns saved before, and for child agents' turns
saved without one), and the tool calls of an open turn as they start and end
(:mod:`agent.store.calls`; NULL once it is closed): SQLite's version 8, PostgreSQL's
version 5."""

TURN_FINISH_AND_DISMISSAL: tuple[str, ...] = (
    "ALTER TABLE turns ADD COLUMN finish_reason TEXT",
    "ALTER TABLE turns ADD COLUMN dismissed INTEGER",
)
"""How the server ended a closed turn's last reply (``finish_reason``: ``length`` when it cut
it at its token limit; NULL for turns saved before, and for stopped or failed ones), and, for
a prompt that was never sent, whether the person dismissed it (``dismissed`` 1: it is offered
again no more): SQLite's version 10, PostgreSQL's version 7."""

TRANSCRIPT_EVENT_COLUMNS = """
        session_id      TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        after_position  INTEGER NOT NULL CHECK (after_position >= -1),
        turn_id         TEXT,
        type            TEXT NOT NULL,
        payload         TEXT NOT NULL,"""
"""The columns of ``transcript_events`` after its id (SQLite's version 11, PostgreSQL's
version 8), spelled alike in both: the events a session showed among its messages (a
compression's outcome line), see :class:`~agent.store.event_row.TranscriptEventRow`."""

TRANSCRIPT_EVENTS_INDEX = (
    "CREATE INDEX transcript_events_session ON transcript_events(session_id, id)"
)
"""Read per session, in order."""


def turn_stop_tool(real: str) -> tuple[str, ...]:
    """The tool call a stop ended, kept on its turn so a resumed session's stop receipt names
    it as the live one did (``stop_tool``, its process group ``stop_tool_pid`` and the
    milliseconds until that group was gone, ``stop_tool_ended_ms``; NULL when no tool ran, and
    for turns saved before): SQLite's version 12, PostgreSQL's version 9.

    Args:
        real: the dialect's floating-point type (``REAL``, ``DOUBLE PRECISION``).
    """
    return (
        "ALTER TABLE turns ADD COLUMN stop_tool TEXT",
        "ALTER TABLE turns ADD COLUMN stop_tool_pid INTEGER",
        f"ALTER TABLE turns ADD COLUMN stop_tool_ended_ms {real}",
    )
