"""Turns: the ``turns`` table, each turn closed once with its outcome.

A turn that starts takes its prompt out of ``queued_prompts`` and appends it to the transcript
in the same transaction (see :mod:`~agent.store.sql.queued`); every write holds the turn's
session (a host whose session was taken over can neither close, draft nor start a turn of it).
Crash recovery closes the turns of owners that are gone, asking the store's
:class:`~agent.store.liveness.OwnerLiveness`, and takes their sessions over.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent.provider.types import ChatMessage
from agent.store.calls import SavedCall, calls_from_json, calls_to_json, recovered_messages
from agent.store.errors import StoreError, StoreFenced, StoreNotFound
from agent.store.rows import (
    CRASH_EXIT_REASON,
    NOT_SENT_PREFIX,
    RUNNING,
    NewMessage,
    TurnOutcome,
    TurnRow,
)
from agent.store.sql.core import Core, Tx, must
from agent.store.sql.firings import close_crashed_firings
from agent.store.sql.messages import as_new, columns, insert_messages
from agent.usage import TokenUsage

_TURN_COLUMNS = columns(TurnRow)

USAGE_UPDATE = (
    "UPDATE turns SET usage_requests = {p}, usage_prompt = {p}, usage_completion = {p},"
    " usage_cached = {p}, usage_estimated = {p} WHERE id = {p}"
)
"""The statement that saves a closed turn's usage (``{p}``: the driver's placeholder)."""


def usage_values(turn_id: str, usage: TokenUsage) -> tuple[int | str, ...]:
    """The parameters of :data:`USAGE_UPDATE` for ``usage`` of ``turn_id``."""
    return (
        usage.requests,
        usage.prompt_tokens,
        usage.completion_tokens,
        usage.cached_tokens,
        usage.estimated_requests,
        turn_id,
    )


class SqlTurns:
    """Turns (implements :class:`~agent.store.protocol.Turns`).

    Args:
        core: what the table groups of the store share.
    """

    def __init__(self, core: Core) -> None:
        self._e = core.engine
        self._where = core.where
        self._clock = core.clock
        self._owner = core.owner
        self._liveness = core.liveness
        self._order = core.engine.dialect.turn_order

    def start_turn(
        self,
        turn_id: str,
        session_id: str,
        prompt: str,
        started_at: float | None = None,
        *,
        record_prompt: bool = True,
        parent_turn_id: str | None = None,
        model: str | None = None,
    ) -> TurnRow:
        """Write a running turn and (by default) its prompt as a user message, in one transaction.

        Call it when the turn starts running (not when it is queued), so the prompt's position
        follows the previous turn's reply. The prompt's queued row
        (:meth:`~agent.store.sql.queued.SqlQueue.queue_prompt`), if any, is deleted in the
        same transaction, so a crash neither loses nor doubles it. Where turns keep a fencing
        number, the turn gets the one this store holds the session with.

        Args:
            turn_id: the gateway's turn id.
            session_id: the session.
            prompt: the person's text.
            started_at: unix seconds; None for the clock.
            record_prompt: also append ``prompt`` as a ``user`` message of this turn.
            parent_turn_id: for a child agent's turn, the turn that delegated it (a turn of
                the same session); its prompt is then never recorded as a message.
            model: the model the turn runs with, or None. A turn of the session itself that
                names one also makes it the session's ``model`` (a resumed session goes on
                with the model it last ran with).

        Returns:
            the new turn row.

        Raises:
            StoreNotFound: no such session.
            StoreFenced: another owner holds the session.
            StoreError: the turn id exists already, the parent is no turn of the session, or the
                write failed (nothing was written).
        """
        now = self._clock()
        started = now if started_at is None else started_at
        fenced = self._e.dialect.turn_fence

        def tx(t: Tx) -> TurnRow:
            fence = self._e.hold(t, session_id)
            if parent_turn_id is not None and not t.one(
                "SELECT 1 FROM turns WHERE id = ? AND session_id = ?", (parent_turn_id, session_id)
            ):
                raise StoreError(f"no parent turn {parent_turn_id!r} in the session", self._where)
            row = {
                "id": turn_id,
                "session_id": session_id,
                "prompt": prompt,
                "owner": self._owner,
                "started_at": started,
                "status": RUNNING,
                "parent_turn_id": parent_turn_id,
                "model": model,
            }
            if fenced:
                row["fence"] = fence
            added = t.run(
                f"INSERT INTO turns ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})"
                " ON CONFLICT (id) DO NOTHING",
                tuple(row.values()),
            )
            if added != 1:
                raise StoreError(f"a turn {turn_id!r} exists already", self._where)
            t.run("DELETE FROM queued_prompts WHERE turn_id = ?", (turn_id,))
            if model and parent_turn_id is None:
                t.run("UPDATE sessions SET model = ? WHERE id = ?", (model, session_id))
            if record_prompt and parent_turn_id is None:
                user = NewMessage(ChatMessage(role="user", content=prompt))
                insert_messages(t, session_id, [user], turn_id, now)
            else:
                t.run("UPDATE sessions SET updated_at = ? WHERE id = ?", (now, session_id))
            return TurnRow(
                *must(t.one(f"SELECT {_TURN_COLUMNS} FROM turns WHERE id = ?", (turn_id,)))
            )

        return self._e.write(tx)

    def save_draft(self, turn_id: str, text: str, *, wait: bool = True) -> bool:
        """Checkpoint the reply streamed so far, so a crash keeps what the person saw.

        The draft becomes a partial assistant message only if the process dies before the turn
        is closed (:meth:`recover_open_turns`); a normal close replaces it with the final
        messages. It is written as a transaction that is not durable on its own (see
        :meth:`~agent.store.sql.core.Engine.write`): the turn's close, which replaces it, is.

        Args:
            turn_id: the open turn.
            text: the whole visible reply so far (not a delta).
            wait: False to give up at once (returning False) when another write holds the
                database or it is away, instead of waiting; for callers on a latency-sensitive
                thread.

        Returns:
            False when nothing was written: the turn is closed (or unknown), the database was
            busy or away with ``wait=False``, or the session belongs to another owner now.

        Raises:
            StoreLocked: busy (or away) past the store's bound (``wait=True`` only).
        """
        try:
            return self._set_open(turn_id, "draft", text, wait=wait, durable=False)
        except StoreError:
            if wait:
                raise
            return False

    def save_calls(self, turn_id: str, calls: Sequence[SavedCall]) -> bool:
        """Save the open turn's tool calls as they stand (each one that started, with its
        result once it has one), durably, replacing what was saved before: a turn that crash
        recovery closes gets them as messages.

        Returns:
            False when nothing was written: the turn is closed (or unknown), or its session
            belongs to another owner now.

        Raises:
            StoreError: the write failed (nothing was written).
        """
        return self._set_open(turn_id, "calls", calls_to_json(calls))

    def _hold_turn(self, t: Tx, turn_id: str) -> bool:
        """Hold the session of ``turn_id`` in transaction ``t``; False when no such turn.

        Raises:
            StoreFenced: another owner holds the session.
        """
        found = t.one("SELECT session_id FROM turns WHERE id = ?", (turn_id,))
        if found is None:
            return False
        self._e.hold(t, found[0])
        return True

    def _set_open(
        self, turn_id: str, column: str, value: str, *, wait: bool = True, durable: bool = True
    ) -> bool:
        """Set one column of an open turn, holding its session; False when nothing was
        written (closed or unknown turn, or its session belongs to another owner now)."""

        def tx(t: Tx) -> bool:
            if not self._hold_turn(t, turn_id):
                return False
            changed = t.run(
                f"UPDATE turns SET {column} = ? WHERE id = ? AND ended_at IS NULL",
                (value, turn_id),
            )
            return changed == 1

        try:
            return self._e.write(tx, wait=wait, durable=durable)
        except StoreFenced:
            return False

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
            StoreFenced: another owner holds the session (it recovered the turn, or will).
            StoreError: the write failed (nothing was written).
        """
        items = [as_new(m) for m in messages]

        def tx(t: Tx) -> bool:
            found = t.one("SELECT session_id FROM turns WHERE id = ?", (turn_id,))
            if found is None:
                raise StoreNotFound(f"no turn {turn_id!r}", self._where)
            session_id = found[0]
            self._e.hold(t, session_id)
            now = self._clock()
            closed = t.run(
                "UPDATE turns SET ended_at = ?, status = ?, exit_reason = ?, stop_issuer = ?,"
                " stop_surface = ?, stop_reason = ?, prompt_tokens = ?, completion_tokens = ?,"
                " stop_closed_ms = ?, stop_exited_ms = ?, children_ended = ?, error = ?,"
                " reply = ?, finish_reason = ?, stop_tool = ?, stop_tool_pid = ?,"
                " stop_tool_ended_ms = ?, draft = NULL,"
                # a child agent's calls are not the session's messages: its row keeps them
                " calls = CASE WHEN parent_turn_id IS NULL THEN NULL ELSE calls END"
                " WHERE id = ? AND ended_at IS NULL",
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
                    outcome.finish_reason,
                    outcome.stop_tool,
                    outcome.stop_tool_pid,
                    outcome.stop_tool_ended_ms,
                    turn_id,
                ),
            )
            if closed != 1:
                return False
            if outcome.usage is not None:
                t.run(USAGE_UPDATE.format(p="?"), usage_values(turn_id, outcome.usage))
            insert_messages(t, session_id, items, turn_id, now)
            t.run("UPDATE sessions SET updated_at = ? WHERE id = ?", (now, session_id))
            return True

        return self._e.write(tx)

    def close_turn(self, turn_id: str, outcome: TurnOutcome) -> bool:
        """Close a turn with its outcome, exactly once, adding no message.

        Returns:
            False when the turn was closed already (nothing is written).

        Raises:
            StoreNotFound: no such turn.
        """
        return self.record_turn_end(turn_id, (), outcome)

    def dismiss_unsent(self, turn_id: str) -> bool:
        """The person dismissed a prompt that was never sent (its turn closed as not sent):
        mark it, so it is offered again no more.

        Returns:
            False when nothing changed: no such turn, it ran, or it was dismissed already.

        Raises:
            StoreFenced: another owner holds the session.
            StoreError: the write failed (nothing was written).
        """

        def tx(t: Tx) -> bool:
            if not self._hold_turn(t, turn_id):
                return False
            changed = t.run(
                "UPDATE turns SET dismissed = 1 WHERE id = ? AND ended_at IS NOT NULL"
                " AND dismissed IS NULL AND substr(error, 1, ?) = ?",
                (turn_id, len(NOT_SENT_PREFIX), NOT_SENT_PREFIX),
            )
            return changed == 1

        return self._e.write(tx)

    def get_turn(self, turn_id: str) -> TurnRow | None:
        """The turn, or None."""
        row = self._e.read(
            lambda t: t.one(f"SELECT {_TURN_COLUMNS} FROM turns WHERE id = ?", (turn_id,))
        )
        return None if row is None else TurnRow(*row)

    def list_turns(self, session_id: str) -> list[TurnRow]:
        """The session's turns, oldest first."""
        rows = self._e.read(
            lambda t: t.all(
                f"SELECT {_TURN_COLUMNS} FROM turns WHERE session_id = ?"
                f" ORDER BY started_at, {self._order}",
                (session_id,),
            )
        )
        return [TurnRow(*r) for r in rows]

    def open_turns(self) -> list[TurnRow]:
        """Every turn without a terminal outcome, over all sessions."""
        rows = self._e.read(
            lambda t: t.all(
                f"SELECT {_TURN_COLUMNS} FROM turns WHERE ended_at IS NULL"
                f" ORDER BY started_at, {self._order}"
            )
        )
        return [TurnRow(*r) for r in rows]

    def fence_of(self, turn_id: str) -> int | None:
        """The fencing number the turn was started with; None for an unknown turn, or where
        turns keep none (:attr:`~agent.store.sql.core.Dialect.turn_fence`)."""
        if not self._e.dialect.turn_fence:
            return None
        row = self._e.read(lambda t: t.one("SELECT fence FROM turns WHERE id = ?", (turn_id,)))
        return None if row is None else int(row[0])

    def recover_open_turns(self, *, include_live: bool = False) -> list[str]:
        """Close the turns of owners that are gone as ``failed(Crash)``, in one transaction.

        A turn's saved tool calls become its messages (a child agent's stay on its row, for
        its card), and its draft (the reply streamed before the
        crash) a partial assistant message of that turn, so nothing the person saw is lost;
        its session is taken over (:meth:`~agent.store.sql.core.Engine.hold`), and the
        backend hears which turns closed (:meth:`~agent.store.sql.core.Engine.turns_recovered`).
        A session another live owner
        holds is left to that owner. Turns of this store's owner, or of live owners, are left
        alone unless ``include_live``.

        Returns:
            the ids of the turns closed.
        """

        def tx(t: Tx) -> list[str]:
            rows = [
                TurnRow(*r)
                for r in t.all(
                    f"SELECT {_TURN_COLUMNS} FROM turns WHERE ended_at IS NULL"
                    f" ORDER BY session_id, started_at, {self._order}"
                )
            ]
            alive: dict[str, bool] = {}
            for turn in rows:
                if turn.owner not in alive:
                    alive[turn.owner] = turn.owner == self._owner or self._liveness.is_alive(
                        turn.owner
                    )
            gone = {owner for owner, live in alive.items() if not live}
            now = self._clock()
            closed: list[str] = []
            for turn in rows:
                if not include_live and alive[turn.owner]:
                    continue
                try:
                    self._e.hold(t, turn.session_id, gone=gone, force=include_live)
                except StoreFenced:
                    continue  # a live owner holds the session now: its turns are its own
                pid = turn.owner.split(":")[1] if turn.owner.count(":") >= 2 else "?"
                child = turn.parent_turn_id is not None
                ended = t.run(
                    "UPDATE turns SET ended_at = ?, status = 'failed', exit_reason = ?,"
                    " error = ?, draft = NULL, calls = ?, reply = ?"
                    " WHERE id = ? AND ended_at IS NULL",
                    (
                        now,
                        CRASH_EXIT_REASON,
                        f"desk stopped before this turn ended (process {pid} is gone)",
                        # a child agent's calls and reply are not the session's: its row keeps
                        # them (its draft as its reply)
                        turn.calls if child else None,
                        turn.draft if child else turn.reply,
                        turn.id,
                    ),
                )
                if ended != 1:
                    continue
                if not child:
                    calls = recovered_messages(calls_from_json(turn.calls))
                    insert_messages(t, turn.session_id, calls, turn.id, now)
                if turn.draft and not child:
                    draft = NewMessage(
                        ChatMessage(role="assistant", content=turn.draft), partial=True
                    )
                    insert_messages(t, turn.session_id, [draft], turn.id, now)
                closed.append(turn.id)
            close_crashed_firings(t, [r for r in rows if r.id in closed], gone, now)
            if closed:
                self._e.turns_recovered(t, closed)
            return closed

        return self._e.write(tx)
