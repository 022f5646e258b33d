"""The SQLite session store: the embedded default behind :class:`~agent.store.SessionStore`.

One database file holds sessions, their transcripts, turns and compression state. Every
mutation is one transaction (see :mod:`agent.store.connections` for locking), so a stop, a
crash or a quit never leaves a half-written row: a transaction is either in the file whole or
not at all, and whatever a call reported as written survives a killed process.
"""

from __future__ import annotations

import os
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, cast

from agent.provider.types import ChatMessage, Role
from agent.store.connections import MEMORY, Connections, Synchronous, resolve
from agent.store.errors import (
    StoreCorrupt,
    StoreError,
    StoreLocked,
    StoreNotFound,
    StoreReadOnly,
    StoreTooNew,
)
from agent.store.liveness import LocalLiveness, OwnerLiveness
from agent.store.queued import QueuedPrompts
from agent.store.rows import (
    CRASH_EXIT_REASON,
    RUNNING,
    CompressionAttemptRow,
    Cooldown,
    LeaseRow,
    MessageRow,
    NewMessage,
    SessionRow,
    TurnOutcome,
    TurnRow,
    tool_calls_from_json,
    tool_calls_to_json,
)
from agent.store.schema import MIGRATIONS, SCHEMA_VERSION
from agent.tokens import estimate_tokens

Clock = Callable[[], float]

_SESSION_COLUMNS = (
    "id, title, model, cwd, created_at, updated_at, compression_cooldown_until,"
    " compression_cooldown_step, last_error"
)
_MESSAGE_COLUMNS = (
    "id, session_id, position, order_key, role, content, reasoning, tool_calls, tool_call_id,"
    " token_estimate, active, archived_by, partial, turn_id, created_at"
)
_TURN_COLUMNS = (
    "id, session_id, prompt, owner, started_at, ended_at, status, exit_reason, stop_issuer,"
    " stop_surface, stop_reason, prompt_tokens, completion_tokens, stop_closed_ms,"
    " stop_exited_ms, children_ended, error, draft"
)
_ATTEMPT_COLUMNS = (
    "id, session_id, generation, holder, started_at, ended_at, phase, outcome, tokens_in,"
    " tokens_out, error, summary_message_id"
)


def _session_row(r: Sequence[Any]) -> SessionRow:
    return SessionRow(
        id=r[0],
        title=r[1],
        model=r[2],
        cwd=r[3],
        created_at=r[4],
        updated_at=r[5],
        compression_cooldown_until=r[6],
        compression_cooldown_step=r[7],
        last_error=r[8],
    )


def _message_row(r: Sequence[Any]) -> MessageRow:
    # Positional, in MessageRow's field order (this runs once per message on session open).
    return MessageRow(
        r[0],
        r[1],
        r[2],
        r[3],
        r[4],
        r[5],
        r[6],
        tool_calls_from_json(r[7]) if r[7] is not None else (),
        r[8],
        r[9],
        bool(r[10]),
        r[11],
        bool(r[12]),
        r[13],
        r[14],
    )


def _turn_row(r: Sequence[Any]) -> TurnRow:
    return TurnRow(
        id=r[0],
        session_id=r[1],
        prompt=r[2],
        owner=r[3],
        started_at=r[4],
        ended_at=r[5],
        status=r[6],
        exit_reason=r[7],
        stop_issuer=r[8],
        stop_surface=r[9],
        stop_reason=r[10],
        prompt_tokens=r[11],
        completion_tokens=r[12],
        stop_closed_ms=r[13],
        stop_exited_ms=r[14],
        children_ended=r[15],
        error=r[16],
        draft=r[17],
    )


def _attempt_row(r: Sequence[Any]) -> CompressionAttemptRow:
    return CompressionAttemptRow(
        id=r[0],
        session_id=r[1],
        generation=r[2],
        holder=r[3],
        started_at=r[4],
        ended_at=r[5],
        phase=r[6],
        outcome=r[7],
        tokens_in=r[8],
        tokens_out=r[9],
        error=r[10],
        summary_message_id=r[11],
    )


def _as_new(item: ChatMessage | NewMessage) -> NewMessage:
    return item if isinstance(item, NewMessage) else NewMessage(item)


class SqliteStore(QueuedPrompts):
    """Sessions, transcripts, turns, queued prompts and compression state in one SQLite file.

    Thread-safe. Opening creates the parent directory and the file when missing, switches the
    file to WAL mode, applies pending schema migrations (each in one transaction) and, unless
    ``recover=False``, closes turns, queued prompts and compressions left behind by a process
    that is gone (:meth:`recover_open_turns`, :meth:`recover_queued_prompts`,
    :meth:`recover_abandoned_compressions`). The queued-prompt methods live in
    :class:`~agent.store.queued.QueuedPrompts`.

    Args:
        path: the database file, or ``":memory:"`` (one private in-memory database, for tests).
        clock: wall-clock source in unix seconds, for row times and lease expiry.
        busy_timeout_s: how long a write waits for another writer, in seconds, before
            :class:`~agent.store.errors.StoreLocked`.
        synchronous: ``FULL`` (default: fsync at every commit, durable across power loss) or
            ``NORMAL`` (durable across a killed process only; faster).
        liveness: this process's owner identity (written on the turns and queued prompts it
            starts) and whether another owner still runs (crash recovery); default
            :class:`~agent.store.liveness.LocalLiveness`.
        recover: run crash recovery on open.

    Raises:
        StoreCorrupt: the file is not a SQLite database (the message names the path) or is
            damaged.
        StoreReadOnly: the file or its directory cannot be written.
        StoreLocked: another process held the file past the busy timeout.
        StoreTooNew: the file was written by a newer desk.
        StoreError: any other failure to open.
    """

    def __init__(
        self,
        path: Path | str,
        *,
        clock: Clock = time.time,
        busy_timeout_s: float = 5.0,
        synchronous: Synchronous = "FULL",
        liveness: OwnerLiveness | None = None,
        recover: bool = True,
    ) -> None:
        self.path = resolve(path)
        self._clock = clock
        self._liveness = liveness if liveness is not None else LocalLiveness()
        self._owner = self._liveness.owner
        if self.path != MEMORY:
            _prepare_file(Path(self.path))
        self._db = Connections(self.path, busy_timeout_s=busy_timeout_s, synchronous=synchronous)
        try:
            self._migrate()
            if recover:
                self.recover_open_turns()
                self.recover_queued_prompts()  # after: a queue waits for its open turn
                self.recover_abandoned_compressions()
        except BaseException:
            self._db.close()
            raise

    # -- lifecycle -----------------------------------------------------------------------------

    def close(self) -> None:
        """Close the database (idempotent). Later calls raise ``StoreClosed``."""
        self._db.close()

    def __enter__(self) -> SqliteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def owner(self) -> str:
        """The owner string written on the turns this store starts."""
        return self._owner

    def schema_version(self) -> int:
        """``PRAGMA user_version`` of the file."""
        with self._db.read() as conn:
            return int(conn.execute("PRAGMA user_version").fetchone()[0])

    def integrity_check(self) -> str:
        """``PRAGMA integrity_check``: ``"ok"``, or SQLite's list of problems (one per line)."""
        with self._db.read() as conn:
            rows = conn.execute("PRAGMA integrity_check").fetchall()
        return "\n".join(str(r[0]) for r in rows)

    def _migrate(self) -> None:
        with self._db.read() as conn:
            version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        if version > SCHEMA_VERSION:
            raise StoreTooNew(
                f"the session database {self.path} was written by a newer desk "
                f"(schema {version}; this desk knows up to {SCHEMA_VERSION})",
                self.path,
            )
        while version < SCHEMA_VERSION:
            with self._db.write() as conn:
                # Another process may have migrated while we waited for the write lock.
                version = int(conn.execute("PRAGMA user_version").fetchone()[0])
                if version >= SCHEMA_VERSION:
                    break
                for statement in MIGRATIONS[version]:
                    conn.execute(statement)
                version += 1
                conn.execute(f"PRAGMA user_version = {version}")

    # -- sessions ------------------------------------------------------------------------------

    def create_session(
        self,
        session_id: str | None = None,
        *,
        title: str = "",
        model: str = "",
        cwd: str = "",
        created_at: float | None = None,
        messages: Sequence[ChatMessage | NewMessage] = (),
    ) -> SessionRow:
        """Create a session, with its first messages (e.g. the system prompt), in one transaction.

        Args:
            session_id: the id; None for a new random one (12 hex digits).
            title: shown in lists.
            model: the model name.
            cwd: the working directory.
            created_at: unix seconds; None for the clock.
            messages: initial transcript, positions 0, 1, ...

        Returns:
            the new row.

        Raises:
            StoreError: the id exists already, or the write failed.
        """
        sid = session_id or uuid.uuid4().hex[:12]
        now = self._clock() if created_at is None else created_at
        with self._db.write() as conn:
            if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (sid,)).fetchone():
                raise StoreError(f"a session {sid!r} exists already", self.path)
            conn.execute(
                "INSERT INTO sessions (id, title, model, cwd, created_at, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (sid, title, model, cwd, now, now),
            )
            self._insert_messages(conn, sid, [_as_new(m) for m in messages], None, now)
            row = conn.execute(
                f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE id = ?", (sid,)
            ).fetchone()
        return _session_row(row)

    def get_session(self, session_id: str) -> SessionRow | None:
        """The session, or None when there is none with that id."""
        with self._db.read() as conn:
            row = conn.execute(
                f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE id = ?", (session_id,)
            ).fetchone()
        return None if row is None else _session_row(row)

    def list_sessions(self, limit: int = 50, offset: int = 0) -> list[SessionRow]:
        """Sessions, most recently updated first (ties: most recently created first).

        Args:
            limit: at most this many rows.
            offset: skip this many rows first.
        """
        with self._db.read() as conn:
            rows = conn.execute(
                f"SELECT {_SESSION_COLUMNS} FROM sessions"
                " ORDER BY updated_at DESC, rowid DESC LIMIT ? OFFSET ?",
                (limit, offset),
            ).fetchall()
        return [_session_row(r) for r in rows]

    def most_recent_session(self) -> SessionRow | None:
        """The most recently updated session, or None when there is none."""
        rows = self.list_sessions(limit=1)
        return rows[0] if rows else None

    def rename_session(self, session_id: str, title: str) -> None:
        """Set the title (and ``updated_at``).

        Raises:
            StoreNotFound: no such session.
        """
        with self._db.write() as conn:
            cur = conn.execute(
                "UPDATE sessions SET title = ?, updated_at = ? WHERE id = ?",
                (title, self._clock(), session_id),
            )
            if cur.rowcount != 1:
                raise StoreNotFound(f"no session {session_id!r}", self.path)

    def set_last_error(self, session_id: str, error: str | None) -> None:
        """Remember (or clear, with None) the last error shown for a session.

        Raises:
            StoreNotFound: no such session.
        """
        with self._db.write() as conn:
            cur = conn.execute(
                "UPDATE sessions SET last_error = ? WHERE id = ?", (error, session_id)
            )
            if cur.rowcount != 1:
                raise StoreNotFound(f"no session {session_id!r}", self.path)

    def delete_session(self, session_id: str) -> bool:
        """Delete a session for real, with its messages, turns, lease and attempts (cascade).

        Asking the person to confirm is the UI's job.

        Returns:
            False when there was no such session.
        """
        with self._db.write() as conn:
            cur = conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
            return cur.rowcount == 1

    # -- messages ------------------------------------------------------------------------------

    def _require_session(self, conn: sqlite3.Connection, session_id: str) -> None:
        if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is None:
            raise StoreNotFound(f"no session {session_id!r}", self.path)

    def _insert_messages(
        self,
        conn: sqlite3.Connection,
        session_id: str,
        items: Iterable[NewMessage],
        turn_id: str | None,
        now: float,
        *,
        order_key: int | None = None,
    ) -> list[MessageRow]:
        """Append inside the caller's write transaction; positions continue without gaps.

        A new message's ``order_key`` is its position (every older row's key is at most its own
        position, so it sorts last), unless ``order_key`` places one summary elsewhere.
        """
        items = list(items)
        if not items:
            return []
        (position,) = conn.execute(
            "SELECT COALESCE(MAX(position) + 1, 0) FROM messages WHERE session_id = ?",
            (session_id,),
        ).fetchone()
        rows: list[MessageRow] = []
        for item in items:
            msg = item.message
            tokens = (
                item.token_estimate if item.token_estimate is not None else estimate_tokens(msg)
            )
            key = position if order_key is None else order_key
            cur = conn.execute(
                "INSERT INTO messages (session_id, position, order_key, role, content, reasoning,"
                " tool_calls, tool_call_id, token_estimate, active, partial, turn_id, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?)",
                (
                    session_id,
                    position,
                    key,
                    msg.role,
                    msg.content,
                    item.reasoning,
                    tool_calls_to_json(msg.tool_calls),
                    msg.tool_call_id,
                    tokens,
                    int(item.partial),
                    turn_id,
                    now,
                ),
            )
            rows.append(
                MessageRow(
                    id=cast(int, cur.lastrowid),
                    session_id=session_id,
                    position=position,
                    order_key=key,
                    role=msg.role,
                    content=msg.content,
                    reasoning=item.reasoning,
                    tool_calls=msg.tool_calls,
                    tool_call_id=msg.tool_call_id,
                    token_estimate=tokens,
                    active=True,
                    archived_by=None,
                    partial=item.partial,
                    turn_id=turn_id,
                    created_at=now,
                )
            )
            position += 1
        conn.execute("UPDATE sessions SET updated_at = ? WHERE id = ?", (now, session_id))
        return rows

    def append_message(
        self,
        session_id: str,
        message: ChatMessage | NewMessage,
        *,
        turn_id: str | None = None,
        partial: bool = False,
        reasoning: str | None = None,
        token_estimate: int | None = None,
    ) -> MessageRow:
        """Append one message at the session's next position (assigned inside the transaction).

        Args:
            session_id: the session.
            message: the message (a :class:`NewMessage` carries its own flags; then
                ``partial``, ``reasoning`` and ``token_estimate`` are ignored).
            turn_id: the turn that adds it, or None.
            partial: True for a reply cut short.
            reasoning: reasoning text shown with it.
            token_estimate: tokens; None for :func:`~agent.tokens.estimate_tokens`.

        Returns:
            the stored row.

        Raises:
            StoreNotFound: no such session, or ``turn_id`` names no turn of it.
            StoreError: the write failed (nothing was written).
        """
        item = (
            message
            if isinstance(message, NewMessage)
            else NewMessage(message, partial, reasoning, token_estimate)
        )
        return self.append_messages(session_id, [item], turn_id=turn_id)[0]

    def append_messages(
        self,
        session_id: str,
        messages: Sequence[ChatMessage | NewMessage],
        *,
        turn_id: str | None = None,
    ) -> list[MessageRow]:
        """Append several messages in one transaction (all or none).

        Raises:
            StoreNotFound: no such session, or ``turn_id`` names no turn of it.
            StoreError: the write failed (nothing was written).
        """
        items = [_as_new(m) for m in messages]
        with self._db.write() as conn:
            self._require_session(conn, session_id)
            if turn_id is not None:
                found = conn.execute(
                    "SELECT 1 FROM turns WHERE id = ? AND session_id = ?", (turn_id, session_id)
                ).fetchone()
                if found is None:
                    raise StoreNotFound(f"no turn {turn_id!r} in session {session_id!r}", self.path)
            return self._insert_messages(conn, session_id, items, turn_id, self._clock())

    def active_messages(self, session_id: str) -> list[MessageRow]:
        """The active transcript (archived rows left out), in order; [] for an unknown session."""
        with self._db.read() as conn:
            rows = conn.execute(
                f"SELECT {_MESSAGE_COLUMNS} FROM messages"
                " WHERE session_id = ? AND active = 1 ORDER BY order_key",
                (session_id,),
            ).fetchall()
        return [_message_row(r) for r in rows]

    def active_message_ids(self, session_id: str) -> list[int]:
        """Ids of the active transcript's messages, in order (cheap: no row objects)."""
        with self._db.read() as conn:
            rows = conn.execute(
                "SELECT id FROM messages WHERE session_id = ? AND active = 1 ORDER BY order_key",
                (session_id,),
            ).fetchall()
        return [r[0] for r in rows]

    def all_messages(self, session_id: str) -> list[MessageRow]:
        """Every message ever appended, archived ones included, in append order (position)."""
        with self._db.read() as conn:
            rows = conn.execute(
                f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE session_id = ? ORDER BY position",
                (session_id,),
            ).fetchall()
        return [_message_row(r) for r in rows]

    def load_history(self, session_id: str) -> list[ChatMessage]:
        """The transcript sent to the model: active messages, in order ([] if unknown).

        Partial replies are included (the model sees what the person saw); reasoning is not.
        """
        with self._db.read() as conn:
            rows = conn.execute(
                "SELECT role, content, tool_calls, tool_call_id FROM messages"
                " WHERE session_id = ? AND active = 1 ORDER BY order_key",
                (session_id,),
            ).fetchall()
        return [
            ChatMessage(
                role=cast(Role, r[0]),
                content=r[1],
                tool_calls=tool_calls_from_json(r[2]) if r[2] is not None else (),
                tool_call_id=r[3],
            )
            for r in rows
        ]

    # -- turns ---------------------------------------------------------------------------------

    def start_turn(
        self,
        turn_id: str,
        session_id: str,
        prompt: str,
        started_at: float | None = None,
        *,
        record_prompt: bool = True,
    ) -> TurnRow:
        """Write a running turn and (by default) its prompt as a user message, in one transaction.

        Call it when the turn starts running (not when it is queued), so the prompt's position
        follows the previous turn's reply. The prompt's queued row (:meth:`queue_prompt`), if
        any, is deleted in the same transaction, so a crash neither loses nor doubles it.

        Args:
            turn_id: the gateway's turn id.
            session_id: the session.
            prompt: the person's text.
            started_at: unix seconds; None for the clock.
            record_prompt: also append ``prompt`` as a ``user`` message of this turn.

        Returns:
            the new turn row.

        Raises:
            StoreNotFound: no such session.
            StoreError: the turn id exists already, or the write failed (nothing was written).
        """
        now = self._clock()
        started = now if started_at is None else started_at
        with self._db.write() as conn:
            self._require_session(conn, session_id)
            if conn.execute("SELECT 1 FROM turns WHERE id = ?", (turn_id,)).fetchone():
                raise StoreError(f"a turn {turn_id!r} exists already", self.path)
            conn.execute(
                "INSERT INTO turns (id, session_id, prompt, owner, started_at, status)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (turn_id, session_id, prompt, self._owner, started, RUNNING),
            )
            conn.execute("DELETE FROM queued_prompts WHERE turn_id = ?", (turn_id,))
            if record_prompt:
                user = NewMessage(ChatMessage(role="user", content=prompt))
                self._insert_messages(conn, session_id, [user], turn_id, now)
            else:
                conn.execute("UPDATE sessions SET updated_at = ? WHERE id = ?", (now, session_id))
            row = conn.execute(f"SELECT {_TURN_COLUMNS} FROM turns WHERE id = ?", (turn_id,))
            return _turn_row(row.fetchone())

    def save_draft(self, turn_id: str, text: str, *, wait: bool = True) -> bool:
        """Checkpoint the reply streamed so far, so a crash keeps what the person saw.

        The draft becomes a partial assistant message only if the process dies before the turn
        is closed (:meth:`recover_open_turns`); a normal close replaces it with the final
        messages.

        Args:
            turn_id: the open turn.
            text: the whole visible reply so far (not a delta).
            wait: False to give up at once (returning False) when another write holds the
                database, instead of waiting up to the busy timeout; for callers on a latency-
                sensitive thread. The commit itself still costs one fsync with ``FULL``.

        Returns:
            False when the turn is closed (or unknown), or the database was busy with
            ``wait=False``: nothing was written.

        Raises:
            StoreLocked: busy past the busy timeout (``wait=True`` only).
        """
        if not wait:
            try:
                with self._db.write(wait=False) as conn:
                    cur = conn.execute(
                        "UPDATE turns SET draft = ? WHERE id = ? AND ended_at IS NULL",
                        (text, turn_id),
                    )
                    return cur.rowcount == 1
            except StoreLocked:
                return False
        with self._db.write() as conn:
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
        items = [_as_new(m) for m in messages]
        with self._db.write() as conn:
            found = conn.execute(
                "SELECT session_id, ended_at FROM turns WHERE id = ?", (turn_id,)
            ).fetchone()
            if found is None:
                raise StoreNotFound(f"no turn {turn_id!r}", self.path)
            session_id, ended_at = found
            if ended_at is not None:
                return False
            now = self._clock()
            cur = conn.execute(
                "UPDATE turns SET ended_at = ?, status = ?, exit_reason = ?, stop_issuer = ?,"
                " stop_surface = ?, stop_reason = ?, prompt_tokens = ?, completion_tokens = ?,"
                " stop_closed_ms = ?, stop_exited_ms = ?, children_ended = ?, error = ?,"
                " draft = NULL WHERE id = ? AND ended_at IS NULL",
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
                    turn_id,
                ),
            )
            if cur.rowcount != 1:  # cannot happen under the write lock; stay exactly-once anyway
                return False
            self._insert_messages(conn, session_id, items, turn_id, now)
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
        return None if row is None else _turn_row(row)

    def list_turns(self, session_id: str) -> list[TurnRow]:
        """The session's turns, oldest first."""
        with self._db.read() as conn:
            rows = conn.execute(
                f"SELECT {_TURN_COLUMNS} FROM turns WHERE session_id = ?"
                " ORDER BY started_at, rowid",
                (session_id,),
            ).fetchall()
        return [_turn_row(r) for r in rows]

    def open_turns(self) -> list[TurnRow]:
        """Every turn without a terminal outcome, over all sessions."""
        with self._db.read() as conn:
            rows = conn.execute(
                f"SELECT {_TURN_COLUMNS} FROM turns WHERE ended_at IS NULL"
                " ORDER BY started_at, rowid"
            ).fetchall()
        return [_turn_row(r) for r in rows]

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
            for turn in map(_turn_row, rows):
                if not include_live and (
                    turn.owner == self._owner or self._liveness.is_alive(turn.owner)
                ):
                    continue
                if turn.draft:
                    draft = NewMessage(
                        ChatMessage(role="assistant", content=turn.draft), partial=True
                    )
                    self._insert_messages(conn, turn.session_id, [draft], turn.id, now)
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

    # -- compression: leases -------------------------------------------------------------------

    def acquire_lease(self, session_id: str, holder: str, ttl_s: float) -> bool:
        """Take the session's compression lease when nobody holds it or the holding one expired.

        Taking it again while holding it renews it.

        Args:
            session_id: the session.
            holder: who takes it (e.g. ``<owner>/<attempt id>``).
            ttl_s: seconds until it expires unless renewed.

        Returns:
            True when ``holder`` holds the lease now.

        Raises:
            StoreNotFound: no such session.
        """
        now = self._clock()
        with self._db.write() as conn:
            self._require_session(conn, session_id)
            cur = conn.execute(
                "INSERT INTO compression_leases (session_id, holder, acquired_at, expires_at)"
                " VALUES (?, ?, ?, ?)"
                " ON CONFLICT (session_id) DO UPDATE SET holder = excluded.holder,"
                " acquired_at = excluded.acquired_at, expires_at = excluded.expires_at"
                " WHERE compression_leases.expires_at <= ? OR compression_leases.holder = ?",
                (session_id, holder, now, now + ttl_s, now, holder),
            )
            return cur.rowcount == 1

    def renew_lease(self, session_id: str, holder: str, ttl_s: float) -> bool:
        """Push the expiry of a lease ``holder`` still holds to ``ttl_s`` seconds from now.

        Returns:
            False when ``holder`` does not hold it or it expired (then it may belong to another
            holder already: the caller lost exclusivity and must not commit).
        """
        now = self._clock()
        with self._db.write() as conn:
            cur = conn.execute(
                "UPDATE compression_leases SET expires_at = ?"
                " WHERE session_id = ? AND holder = ? AND expires_at > ?",
                (now + ttl_s, session_id, holder, now),
            )
            return cur.rowcount == 1

    def release_lease(self, session_id: str, holder: str) -> bool:
        """Delete the lease row only if ``holder`` holds it (expired or not).

        Returns:
            True when a row was deleted; False when another holder (or nobody) holds it.
        """
        with self._db.write() as conn:
            cur = conn.execute(
                "DELETE FROM compression_leases WHERE session_id = ? AND holder = ?",
                (session_id, holder),
            )
            return cur.rowcount == 1

    def get_lease(self, session_id: str) -> LeaseRow | None:
        """The lease row (possibly expired), or None."""
        with self._db.read() as conn:
            row = conn.execute(
                "SELECT session_id, holder, acquired_at, expires_at FROM compression_leases"
                " WHERE session_id = ?",
                (session_id,),
            ).fetchone()
        return None if row is None else LeaseRow(row[0], row[1], row[2], row[3])

    # -- compression: cooldown -----------------------------------------------------------------

    def set_cooldown(self, session_id: str, until: float | None, step: int) -> None:
        """Set the session's automatic-compression cooldown (``until=None, step=0`` clears it).

        Args:
            session_id: the session.
            until: unix seconds before which automatic compression waits, or None.
            step: failed attempts in a row.

        Raises:
            StoreNotFound: no such session.
        """
        with self._db.write() as conn:
            cur = conn.execute(
                "UPDATE sessions SET compression_cooldown_until = ?, compression_cooldown_step = ?"
                " WHERE id = ?",
                (until, step, session_id),
            )
            if cur.rowcount != 1:
                raise StoreNotFound(f"no session {session_id!r}", self.path)

    def get_cooldown(self, session_id: str) -> Cooldown | None:
        """The session's cooldown, or None when there is no such session."""
        with self._db.read() as conn:
            row = conn.execute(
                "SELECT compression_cooldown_until, compression_cooldown_step FROM sessions"
                " WHERE id = ?",
                (session_id,),
            ).fetchone()
        return None if row is None else Cooldown(until=row[0], step=row[1])

    # -- compression: attempts -----------------------------------------------------------------

    def begin_compression(
        self, session_id: str, holder: str, *, phase: str = "acquire lease"
    ) -> CompressionAttemptRow:
        """Start a compression attempt with the session's next generation (1, 2, 3...).

        Raises:
            StoreNotFound: no such session.
        """
        now = self._clock()
        with self._db.write() as conn:
            self._require_session(conn, session_id)
            (generation,) = conn.execute(
                "SELECT COALESCE(MAX(generation), 0) + 1 FROM compression_attempts"
                " WHERE session_id = ?",
                (session_id,),
            ).fetchone()
            cur = conn.execute(
                "INSERT INTO compression_attempts (session_id, generation, holder, started_at,"
                " phase) VALUES (?, ?, ?, ?, ?)",
                (session_id, generation, holder, now, phase),
            )
            row = conn.execute(
                f"SELECT {_ATTEMPT_COLUMNS} FROM compression_attempts WHERE id = ?",
                (cur.lastrowid,),
            ).fetchone()
        return _attempt_row(row)

    def set_compression_phase(self, attempt_id: int, phase: str) -> bool:
        """Record the phase an open attempt reached; False when it ended already."""
        with self._db.write() as conn:
            cur = conn.execute(
                "UPDATE compression_attempts SET phase = ? WHERE id = ? AND ended_at IS NULL",
                (phase, attempt_id),
            )
            return cur.rowcount == 1

    def get_compression(self, attempt_id: int) -> CompressionAttemptRow | None:
        """The attempt, or None."""
        with self._db.read() as conn:
            row = conn.execute(
                f"SELECT {_ATTEMPT_COLUMNS} FROM compression_attempts WHERE id = ?", (attempt_id,)
            ).fetchone()
        return None if row is None else _attempt_row(row)

    def latest_compression(self, session_id: str) -> CompressionAttemptRow | None:
        """The session's attempt with the highest generation, or None."""
        with self._db.read() as conn:
            row = conn.execute(
                f"SELECT {_ATTEMPT_COLUMNS} FROM compression_attempts WHERE session_id = ?"
                " ORDER BY generation DESC LIMIT 1",
                (session_id,),
            ).fetchone()
        return None if row is None else _attempt_row(row)

    def commit_compression(
        self,
        attempt_id: int,
        *,
        holder: str,
        archive_ids: Sequence[int],
        summary: ChatMessage | NewMessage,
        tokens_in: int | None = None,
        tokens_out: int | None = None,
        release: bool = False,
    ) -> MessageRow | None:
        """Replace a run of active messages by a summary, in one transaction, or change nothing.

        The archived rows stay (``active = 0``, ``archived_by = attempt_id``); the summary is
        appended at the next position with the ``order_key`` of the first archived message, so
        the active transcript reads head, summary, tail. The attempt ends as ``committed``
        (phase ``done``) and the cooldown is cleared.

        Args:
            attempt_id: the attempt.
            holder: the lease holder running it.
            archive_ids: message ids forming a run of consecutive active messages.
            summary: the summary message.
            tokens_in: tokens of the archived messages.
            tokens_out: tokens of the summary.
            release: also delete ``holder``'s lease row, in the same transaction.

        Returns:
            the summary row; None when the commit is refused and nothing changed: the attempt
            ended already, a newer attempt exists, or ``holder`` does not hold an unexpired
            lease of the session.

        Raises:
            ValueError: ``archive_ids`` is empty or not a run of consecutive active messages of
                the attempt's session (a caller bug; nothing changed).
            StoreNotFound: no such attempt.
        """
        if not archive_ids:
            raise ValueError("a compression must archive at least one message")
        now = self._clock()
        with self._db.write() as conn:
            found = conn.execute(
                "SELECT session_id, generation, ended_at FROM compression_attempts WHERE id = ?",
                (attempt_id,),
            ).fetchone()
            if found is None:
                raise StoreNotFound(f"no compression attempt {attempt_id}", self.path)
            session_id, generation, ended_at = found
            if ended_at is not None:
                return None
            (latest,) = conn.execute(
                "SELECT MAX(generation) FROM compression_attempts WHERE session_id = ?",
                (session_id,),
            ).fetchone()
            if generation != latest:
                return None
            lease = conn.execute(
                "SELECT 1 FROM compression_leases WHERE session_id = ? AND holder = ?"
                " AND expires_at > ?",
                (session_id, holder, now),
            ).fetchone()
            if lease is None:
                return None
            keys = conn.execute(
                "SELECT order_key FROM messages WHERE session_id = ? AND active = 1"
                " ORDER BY order_key",
                (session_id,),
            ).fetchall()
            order = [k for (k,) in keys]
            marks = ",".join("?" * len(archive_ids))
            chosen = conn.execute(
                f"SELECT order_key FROM messages WHERE session_id = ? AND active = 1"
                f" AND id IN ({marks}) ORDER BY order_key",
                (session_id, *archive_ids),
            ).fetchall()
            chosen_keys = [k for (k,) in chosen]
            if len(chosen_keys) != len(set(archive_ids)):
                raise ValueError("archive_ids must name active messages of the attempt's session")
            start = order.index(chosen_keys[0])
            if order[start : start + len(chosen_keys)] != chosen_keys:
                raise ValueError("archive_ids must be consecutive in the active transcript")
            conn.execute(
                f"UPDATE messages SET active = 0, archived_by = ? WHERE id IN ({marks})",
                (attempt_id, *archive_ids),
            )
            (row,) = self._insert_messages(
                conn, session_id, [_as_new(summary)], None, now, order_key=chosen_keys[0]
            )
            conn.execute(
                "UPDATE compression_attempts SET ended_at = ?, phase = 'done',"
                " outcome = 'committed', tokens_in = ?, tokens_out = ?, summary_message_id = ?"
                " WHERE id = ?",
                (now, tokens_in, tokens_out, row.id, attempt_id),
            )
            conn.execute(
                "UPDATE sessions SET compression_cooldown_until = NULL,"
                " compression_cooldown_step = 0 WHERE id = ?",
                (session_id,),
            )
            if release:
                conn.execute(
                    "DELETE FROM compression_leases WHERE session_id = ? AND holder = ?",
                    (session_id, holder),
                )
            return row

    def finish_compression(
        self,
        attempt_id: int,
        outcome: str,
        *,
        error: str | None = None,
        cooldown: Cooldown | None = None,
        tokens_in: int | None = None,
        tokens_out: int | None = None,
        release: bool = False,
    ) -> bool:
        """End an attempt that did not commit (``cancelled``, ``failed``, ``timeout``...), once.

        The cooldown is written in the same transaction, and only when this attempt is still
        the session's newest (a late, superseded attempt changes nothing but its own row).
        With ``release``, the attempt's holder's lease row is deleted in that transaction too
        (only that holder's: a lease another holder took meanwhile stays).

        Returns:
            False when the attempt had ended already: nothing is written.

        Raises:
            StoreNotFound: no such attempt.
        """
        now = self._clock()
        with self._db.write() as conn:
            found = conn.execute(
                "SELECT session_id, generation, ended_at FROM compression_attempts WHERE id = ?",
                (attempt_id,),
            ).fetchone()
            if found is None:
                raise StoreNotFound(f"no compression attempt {attempt_id}", self.path)
            session_id, generation, ended_at = found
            if ended_at is not None:
                return False
            if release:
                conn.execute(
                    "DELETE FROM compression_leases WHERE session_id = ?"
                    " AND holder = (SELECT holder FROM compression_attempts WHERE id = ?)",
                    (session_id, attempt_id),
                )
            conn.execute(
                "UPDATE compression_attempts SET ended_at = ?, outcome = ?, error = ?,"
                " tokens_in = COALESCE(?, tokens_in), tokens_out = COALESCE(?, tokens_out)"
                " WHERE id = ? AND ended_at IS NULL",
                (now, outcome, error, tokens_in, tokens_out, attempt_id),
            )
            (latest,) = conn.execute(
                "SELECT MAX(generation) FROM compression_attempts WHERE session_id = ?",
                (session_id,),
            ).fetchone()
            if cooldown is not None and generation == latest:
                conn.execute(
                    "UPDATE sessions SET compression_cooldown_until = ?,"
                    " compression_cooldown_step = ? WHERE id = ?",
                    (cooldown.until, cooldown.step, session_id),
                )
            return True

    def recover_abandoned_compressions(self) -> list[int]:
        """End open attempts whose holder no longer holds an unexpired lease, as ``abandoned``.

        Such an attempt can never commit (commit needs the lease), so closing it only tidies
        the record; the cooldown is left unchanged.

        Returns:
            the ids of the attempts ended.
        """
        now = self._clock()
        with self._db.write() as conn:
            rows = conn.execute(
                "SELECT a.id FROM compression_attempts AS a WHERE a.ended_at IS NULL"
                " AND NOT EXISTS (SELECT 1 FROM compression_leases AS l"
                " WHERE l.session_id = a.session_id AND l.holder = a.holder"
                " AND l.expires_at > ?)",
                (now,),
            ).fetchall()
            ids = [r[0] for r in rows]
            for attempt_id in ids:
                conn.execute(
                    "UPDATE compression_attempts SET ended_at = ?, outcome = 'abandoned',"
                    " error = 'desk stopped during this compression' WHERE id = ?",
                    (now, attempt_id),
                )
        return ids


def _prepare_file(path: Path) -> None:
    """Create the parent directory; refuse a directory or an unwritable file up front.

    Raises:
        StoreCorrupt: ``path`` is a directory.
        StoreReadOnly: the directory cannot be created or written, or the file cannot be
            written.
    """
    if path.is_dir():
        raise StoreCorrupt(f"{path} is a directory, not a desk session database", path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreReadOnly(
            f"cannot create the folder of the session database {path} ({exc.strerror})", path
        ) from exc
    if path.exists() and not os.access(path, os.R_OK | os.W_OK):
        raise StoreReadOnly(f"the session database {path} is read-only (no write permission)", path)
    if not os.access(path.parent, os.W_OK | os.X_OK):
        # WAL mode needs <file>-wal and <file>-shm next to the database.
        raise StoreReadOnly(
            f"the folder of the session database {path} is read-only (no write permission)", path
        )
