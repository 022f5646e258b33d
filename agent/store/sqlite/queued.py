"""Prompts waiting for their turn to start, saved when submitted so a crash or a quit loses none.

The ``queued_prompts`` table of the SQLite store. A prompt waits while it is queued behind the
running turn, or while its own turn has not started yet (a compression may run first). Its row
lives in ``queued_prompts`` until exactly one of these happens, each in one transaction:

- its turn starts: :meth:`~agent.store.sqlite.turns.SqliteTurns.start_turn` writes the turn and
  its user message and deletes the row, together (so a crash can neither lose nor double it);
- the person removes it: :meth:`SqliteQueue.remove_queued_prompt` deletes it, keeping nothing;
  (an edit, :meth:`SqliteQueue.edit_queued_prompt`, only replaces its text, in its place);
- the system drops it (a quit, a disconnect, an eviction):
  :meth:`SqliteQueue.close_unsent_prompts` turns it into a closed turn that never ran;
- its process dies: :meth:`SqliteQueue.recover_queued_prompts` (run on open) does the same,
  as ``failed(Crash)``.

A turn that never ran has its prompt as its one user message, at the place the prompt would
have taken, and an error beginning with :data:`~agent.store.rows.NOT_SENT_PREFIX`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from agent.provider.types import ChatMessage
from agent.store.errors import StoreError
from agent.store.rows import (
    CRASH_EXIT_REASON,
    NOT_SENT_CRASH_ERROR,
    NewMessage,
    QueuedPromptRow,
    TurnOutcome,
)
from agent.store.sqlite.shared import StoreContext, columns, insert_messages, require_session

_QUEUED_COLUMNS = columns(QueuedPromptRow)

CRASH_OUTCOME = TurnOutcome(
    status="failed", exit_reason=CRASH_EXIT_REASON, error=NOT_SENT_CRASH_ERROR
)
"""The outcome of a queued prompt whose process died before it ran."""


class SqliteQueue:
    """Queued prompts in SQLite (implements :class:`~agent.store.protocol.PromptQueue`).

    Args:
        context: what the table groups of the store share (connections, clock, owner).
    """

    def __init__(self, context: StoreContext) -> None:
        self._db = context.db
        self._path = context.path
        self._clock = context.clock
        self._owner = context.owner
        self._liveness = context.liveness

    def queue_prompt(
        self, turn_id: str, session_id: str, prompt: str, queued_at: float | None = None
    ) -> bool:
        """Save a prompt waiting for its turn to start, behind the ones waiting before it.

        Args:
            turn_id: the gateway's turn id (the turn row gets the same id when it starts).
            session_id: the session.
            prompt: the person's text.
            queued_at: unix seconds; None for the clock. An earlier time than the session's
                last queued prompt is raised to it, so the saved order is the order of calls.

        Returns:
            False when the turn exists already (it started, or was closed, before this call
            got the database): nothing is written, since a prompt never runs twice.

        Raises:
            StoreNotFound: no such session.
            StoreError: the prompt is queued already, or the write failed (nothing was written).
        """
        now = self._clock() if queued_at is None else queued_at
        with self._db.write() as conn:
            require_session(conn, session_id, self._path)
            if conn.execute("SELECT 1 FROM turns WHERE id = ?", (turn_id,)).fetchone():
                return False
            found = conn.execute("SELECT 1 FROM queued_prompts WHERE turn_id = ?", (turn_id,))
            if found.fetchone():
                raise StoreError(f"a queued prompt {turn_id!r} exists already", self._path)
            (last,) = conn.execute(
                "SELECT MAX(queued_at) FROM queued_prompts WHERE session_id = ?", (session_id,)
            ).fetchone()
            conn.execute(
                f"INSERT INTO queued_prompts ({_QUEUED_COLUMNS}) VALUES (?, ?, ?, ?, ?)",
                (turn_id, session_id, prompt, self._owner, now if last is None else max(now, last)),
            )
            return True

    def remove_queued_prompt(self, turn_id: str) -> bool:
        """Forget a queued prompt the person removed: nothing of it is kept.

        Returns:
            False when it was not queued (it started, was closed, or was never saved).
        """
        with self._db.write() as conn:
            cur = conn.execute("DELETE FROM queued_prompts WHERE turn_id = ?", (turn_id,))
            return cur.rowcount == 1

    def edit_queued_prompt(self, turn_id: str, prompt: str) -> bool:
        """Replace the text of a queued prompt the person edited; its place stays.

        Returns:
            False when it was not queued (it started, was closed, or was never saved).
        """
        with self._db.write() as conn:
            cur = conn.execute(
                "UPDATE queued_prompts SET prompt = ? WHERE turn_id = ?", (prompt, turn_id)
            )
            return cur.rowcount == 1

    def queued_prompts(self, session_id: str | None = None) -> list[QueuedPromptRow]:
        """The session's queued prompts (every session's, with None), in queue order."""
        where, args = ("WHERE session_id = ?", (session_id,)) if session_id else ("", ())
        with self._db.read() as conn:
            rows = conn.execute(
                f"SELECT {_QUEUED_COLUMNS} FROM queued_prompts {where} ORDER BY queued_at, rowid",
                args,
            ).fetchall()
        return [QueuedPromptRow(*r) for r in rows]

    def close_unsent_prompts(
        self, session_id: str, prompts: Sequence[tuple[str, str]], outcome: TurnOutcome
    ) -> list[str]:
        """Close prompts that will never run as turns that never ran, in order, in one transaction.

        Each becomes a closed turn with ``outcome`` (started when it was queued, if its queued
        row says when) and one user message at the session's next position, as
        :meth:`~agent.store.sqlite.turns.SqliteTurns.start_turn` would have written it; its
        queued row is deleted. A prompt whose turn exists already is skipped (only a leftover
        queued row of it is deleted), so calling this again, or after recovery, doubles nothing.

        Args:
            session_id: the session.
            prompts: ``(turn id, text)`` pairs, in queue order (saved or not as queued).
            outcome: the outcome of each, e.g. the system stop that dropped them with an error
                beginning with :data:`~agent.store.rows.NOT_SENT_PREFIX`.

        Returns:
            the ids of the turns written.

        Raises:
            StoreNotFound: no such session.
            StoreError: the write failed (nothing was written).
        """
        now = self._clock()
        closed: list[str] = []
        with self._db.write() as conn:
            require_session(conn, session_id, self._path)
            for turn_id, prompt in prompts:
                found = conn.execute(
                    "SELECT queued_at FROM queued_prompts WHERE turn_id = ?", (turn_id,)
                ).fetchone()
                started = now if found is None else found[0]
                row = QueuedPromptRow(turn_id, session_id, prompt, self._owner, started)
                if self._close_unsent(conn, row, outcome, now):
                    closed.append(turn_id)
        return closed

    def recover_queued_prompts(self, *, include_live: bool = False) -> list[str]:
        """Close the prompts a dead process left queued, as ``failed(Crash)`` turns that never ran.

        In queue order, in one transaction; the error reads
        :data:`~agent.store.rows.NOT_SENT_CRASH_ERROR`. A session with an open turn keeps its
        queue (run this after :meth:`~agent.store.sqlite.turns.SqliteTurns.recover_open_turns`, so
        only live turns are open), and so does a session whose queue a live process (another
        desk on the same file, or this process) holds, unless ``include_live``.

        Returns:
            the ids of the turns written.
        """
        now = self._clock()
        closed: list[str] = []
        with self._db.write() as conn:
            rows = [
                QueuedPromptRow(*r)
                for r in conn.execute(
                    f"SELECT {_QUEUED_COLUMNS} FROM queued_prompts ORDER BY queued_at, rowid"
                ).fetchall()
            ]
            if not rows:
                return []
            held = {
                r[0] for r in conn.execute("SELECT session_id FROM turns WHERE ended_at IS NULL")
            }
            if not include_live:
                alive: dict[str, bool] = {}
                for row in rows:
                    if row.owner not in alive:
                        alive[row.owner] = row.owner == self._owner or self._liveness.is_alive(
                            row.owner
                        )
                    if alive[row.owner]:
                        held.add(row.session_id)
            for row in rows:
                if row.session_id not in held and self._close_unsent(conn, row, CRASH_OUTCOME, now):
                    closed.append(row.turn_id)
        return closed

    def _close_unsent(
        self, conn: sqlite3.Connection, row: QueuedPromptRow, outcome: TurnOutcome, now: float
    ) -> bool:
        """Write one turn that never ran, inside the caller's transaction; False when it exists."""
        conn.execute("DELETE FROM queued_prompts WHERE turn_id = ?", (row.turn_id,))
        if conn.execute("SELECT 1 FROM turns WHERE id = ?", (row.turn_id,)).fetchone():
            return False
        conn.execute(
            "INSERT INTO turns (id, session_id, prompt, owner, started_at, ended_at, status,"
            " exit_reason, stop_issuer, stop_surface, stop_reason, error)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                row.turn_id,
                row.session_id,
                row.prompt,
                row.owner,
                row.queued_at,
                now if outcome.ended_at is None else outcome.ended_at,
                outcome.status,
                outcome.exit_reason,
                outcome.stop_issuer,
                outcome.stop_surface,
                outcome.stop_reason,
                outcome.error,
            ),
        )
        user = NewMessage(ChatMessage(role="user", content=row.prompt))
        insert_messages(conn, row.session_id, [user], row.turn_id, now)
        return True
