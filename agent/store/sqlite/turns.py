"""Turns of the SQLite store: the ``turns`` table, each turn closed once with its outcome.

A turn that starts takes its prompt out of ``queued_prompts`` and appends it to the transcript
in the same transaction (see :mod:`~agent.store.sqlite.queued`); crash recovery closes the turns
a dead process left open, asking the store's :class:`~agent.store.liveness.OwnerLiveness`."""

from __future__ import annotations

from collections.abc import Sequence

from agent.provider.types import ChatMessage
from agent.store.errors import StoreError, StoreLocked, StoreNotFound
from agent.store.rows import (
    CRASH_EXIT_REASON,
    RUNNING,
    USAGE_UPDATE,
    NewMessage,
    TurnOutcome,
    TurnRow,
    usage_values,
)
from agent.store.sqlite.shared import (
    StoreContext,
    as_new,
    columns,
    insert_messages,
    require_session,
)

_TURN_COLUMNS = columns(TurnRow)


class SqliteTurns:
    """Turns in SQLite (implements :class:`~agent.store.protocol.Turns`).

    Args:
        context: what the table groups of the store share (connections, clock, owner).
    """

    def __init__(self, context: StoreContext) -> None:
        self._db = context.db
        self._path = context.path
        self._clock = context.clock
        self._owner = context.owner
        self._liveness = context.liveness

    def start_turn(
        self,
        turn_id: str,
        session_id: str,
        prompt: str,
        started_at: float | None = None,
        *,
        record_prompt: bool = True,
        parent_turn_id: str | None = None,
    ) -> TurnRow:
        """Write a running turn and (by default) its prompt as a user message, in one transaction.

        Call it when the turn starts running (not when it is queued), so the prompt's position
        follows the previous turn's reply. The prompt's queued row
        (:meth:`~agent.store.sqlite.queued.SqliteQueue.queue_prompt`), if any, is deleted in the
        same transaction, so a crash neither loses nor doubles it.

        Args:
            turn_id: the gateway's turn id.
            session_id: the session.
            prompt: the person's text.
            started_at: unix seconds; None for the clock.
            record_prompt: also append ``prompt`` as a ``user`` message of this turn.
            parent_turn_id: for a child agent's turn, the turn that delegated it (a turn of
                the same session); its prompt is then never recorded as a message.

        Returns:
            the new turn row.

        Raises:
            StoreNotFound: no such session.
            StoreError: the turn id exists already, the parent is no turn of the session, or the
                write failed (nothing was written).
        """
        now = self._clock()
        started = now if started_at is None else started_at
        with self._db.write() as conn:
            require_session(conn, session_id, self._path)
            if conn.execute("SELECT 1 FROM turns WHERE id = ?", (turn_id,)).fetchone():
                raise StoreError(f"a turn {turn_id!r} exists already", self._path)
            if (
                parent_turn_id is not None
                and not conn.execute(
                    "SELECT 1 FROM turns WHERE id = ? AND session_id = ?",
                    (parent_turn_id, session_id),
                ).fetchone()
            ):
                raise StoreError(f"no parent turn {parent_turn_id!r} in the session", self._path)
            conn.execute(
                "INSERT INTO turns (id, session_id, prompt, owner, started_at, status,"
                " parent_turn_id) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (turn_id, session_id, prompt, self._owner, started, RUNNING, parent_turn_id),
            )
            conn.execute("DELETE FROM queued_prompts WHERE turn_id = ?", (turn_id,))
            if record_prompt and parent_turn_id is None:
                user = NewMessage(ChatMessage(role="user", content=prompt))
                insert_messages(conn, session_id, [user], turn_id, now)
            else:
                conn.execute("UPDATE sessions SET updated_at = ? WHERE id = ?", (now, session_id))
            row = conn.execute(f"SELECT {_TURN_COLUMNS} FROM turns WHERE id = ?", (turn_id,))
            return TurnRow(*row.fetchone())

    def save_draft(self, turn_id: str, text: str, *, wait: bool = True) -> bool:
        """Checkpoint the reply streamed so far, so a crash keeps what the person saw.

        The draft becomes a partial assistant message only if the process dies before the turn
        is closed (:meth:`recover_open_turns`); a normal close replaces it with the final
        messages.

        A draft is committed without an fsync (``synchronous = NORMAL`` for this one
        transaction, see :meth:`~agent.store.sqlite.connections.Connections.write`): it
        survives a killed process, costs well under a millisecond instead of an fsync, and the
        turn's close, which replaces it, is durable.

        Args:
            turn_id: the open turn.
            text: the whole visible reply so far (not a delta).
            wait: False to give up at once (returning False) when another write holds the
                database, instead of waiting up to the busy timeout; for callers on a latency-
                sensitive thread.

        Returns:
            False when the turn is closed (or unknown), or the database was busy with
            ``wait=False``: nothing was written.

        Raises:
            StoreLocked: busy past the busy timeout (``wait=True`` only).
        """
        if not wait:
            try:
                with self._db.write(wait=False, durable=False) as conn:
                    cur = conn.execute(
                        "UPDATE turns SET draft = ? WHERE id = ? AND ended_at IS NULL",
                        (text, turn_id),
                    )
                    return cur.rowcount == 1
            except StoreLocked:
                return False
        with self._db.write(durable=False) as conn:
            cur = conn.execute(
                "UPDATE turns SET draft = ? WHERE id = ? AND ended_at IS NULL", (text, turn_id)
            )
            return cur.rowcount == 1

    def record_turn_end(
        self,
        turn_id: str,
        messages: Sequence[ChatMessage | NewMessage],
        outcome: TurnOutcome,
    ) -> bool:
        """Append a turn's messages and close it with its outcome, in one transaction, once.

        Args:
            turn_id: the turn.
            messages: what the turn adds after its prompt (assistant replies, tool results),
                in order; use :func:`~agent.store.rows.turn_messages` to flag a partial reply.
            outcome: the terminal outcome.

        Returns:
            True when this call closed the turn; False when it was closed already, in which
            case nothing is written (a late result never overwrites the booked outcome).

        Raises:
            StoreNotFound: no such turn (never started, or its session was deleted).
            StoreError: the write failed (nothing was written).
        """
        items = [as_new(m) for m in messages]
        with self._db.write() as conn:
            found = conn.execute(
                "SELECT session_id, ended_at FROM turns WHERE id = ?", (turn_id,)
            ).fetchone()
            if found is None:
                raise StoreNotFound(f"no turn {turn_id!r}", self._path)
            session_id, ended_at = found
            if ended_at is not None:
                return False
            now = self._clock()
            cur = conn.execute(
                "UPDATE turns SET ended_at = ?, status = ?, exit_reason = ?, stop_issuer = ?,"
                " stop_surface = ?, stop_reason = ?, prompt_tokens = ?, completion_tokens = ?,"
                " stop_closed_ms = ?, stop_exited_ms = ?, children_ended = ?, error = ?,"
                " reply = ?, draft = NULL WHERE id = ? AND ended_at IS NULL",
                (
                    now if outcome.ended_at is None else outcome.ended_at,
                    outcome.status,
                    outcome.exit_reason,
                    outcome.stop_issuer,
                    outcome.stop_surface,
                    outcome.stop_reason,
                    outcome.prompt_tokens,
                    outcome.completion_tokens,
                    outcome.stop_closed_ms,
                    outcome.stop_exited_ms,
                    outcome.children_ended,
                    outcome.error,
                    outcome.reply,
                    turn_id,
                ),
            )
            if cur.rowcount != 1:  # cannot happen under the write lock; stay exactly-once anyway
                return False
            if outcome.usage is not None:
                conn.execute(USAGE_UPDATE.format(p="?"), usage_values(turn_id, outcome.usage))
            insert_messages(conn, session_id, items, turn_id, now)
            conn.execute("UPDATE sessions SET updated_at = ? WHERE id = ?", (now, session_id))
            return True

    def close_turn(self, turn_id: str, outcome: TurnOutcome) -> bool:
        """Close a turn with its outcome, exactly once, adding no message.

        Returns:
            False when the turn was closed already (nothing is written).

        Raises:
            StoreNotFound: no such turn.
        """
        return self.record_turn_end(turn_id, (), outcome)

    def get_turn(self, turn_id: str) -> TurnRow | None:
        """The turn, or None."""
        with self._db.read() as conn:
            row = conn.execute(
                f"SELECT {_TURN_COLUMNS} FROM turns WHERE id = ?", (turn_id,)
            ).fetchone()
        return None if row is None else TurnRow(*row)

    def list_turns(self, session_id: str) -> list[TurnRow]:
        """The session's turns, oldest first."""
        with self._db.read() as conn:
            rows = conn.execute(
                f"SELECT {_TURN_COLUMNS} FROM turns WHERE session_id = ?"
                " ORDER BY started_at, rowid",
                (session_id,),
            ).fetchall()
        return [TurnRow(*r) for r in rows]

    def open_turns(self) -> list[TurnRow]:
        """Every turn without a terminal outcome, over all sessions."""
        with self._db.read() as conn:
            rows = conn.execute(
                f"SELECT {_TURN_COLUMNS} FROM turns WHERE ended_at IS NULL"
                " ORDER BY started_at, rowid"
            ).fetchall()
        return [TurnRow(*r) for r in rows]

    def recover_open_turns(self, *, include_live: bool = False) -> list[str]:
        """Close the turns a dead process left open, as ``failed(Crash)``, in one transaction.

        A turn's draft (the reply streamed before the crash) becomes a partial assistant
        message of that turn, so nothing the person saw is lost. Turns whose owner process
        still runs (another desk on the same file, or this process) are left alone unless
        ``include_live``.

        Returns:
            the ids of the turns closed.
        """
        closed: list[str] = []
        with self._db.write() as conn:
            rows = conn.execute(
                f"SELECT {_TURN_COLUMNS} FROM turns WHERE ended_at IS NULL"
                " ORDER BY started_at, rowid"
            ).fetchall()
            now = self._clock()
            for turn in (TurnRow(*r) for r in rows):
                if not include_live and (
                    turn.owner == self._owner or self._liveness.is_alive(turn.owner)
                ):
                    continue
                if turn.draft:
                    draft = NewMessage(
                        ChatMessage(role="assistant", content=turn.draft), partial=True
                    )
                    insert_messages(conn, turn.session_id, [draft], turn.id, now)
                pid = turn.owner.split(":")[1] if turn.owner.count(":") >= 2 else "?"
                conn.execute(
                    "UPDATE turns SET ended_at = ?, status = 'failed', exit_reason = ?, error = ?,"
                    " draft = NULL WHERE id = ? AND ended_at IS NULL",
                    (
                        now,
                        CRASH_EXIT_REASON,
                        f"desk stopped before this turn ended (process {pid} is gone)",
                        turn.id,
                    ),
                )
                closed.append(turn.id)
        return closed
