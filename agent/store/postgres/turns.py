"""Turns of the PostgreSQL store: the ``turns`` table, each turn closed once with its outcome.

Method by method the SQLite store's (:class:`agent.store.sqlite.turns.SqliteTurns`), with two
additions for several hosts: every write holds the session's claim (a host whose session was
taken over cannot close, draft or start a turn of it), and a turn row keeps the fencing number
it was started with. Crash recovery takes over the sessions of the owners it finds gone, and
marks the stops still waiting for their turns as taken (the turn's outcome is fixed here, once).
"""

from __future__ import annotations

from collections.abc import Sequence

from agent.provider.types import ChatMessage
from agent.store.errors import StoreError, StoreFenced, StoreNotFound, StoreUnreachable
from agent.store.postgres.database import Cursor
from agent.store.postgres.shared import StoreContext, insert_messages
from agent.store.rows import (
    CRASH_EXIT_REASON,
    RUNNING,
    USAGE_UPDATE,
    NewMessage,
    TurnOutcome,
    TurnRow,
    usage_values,
)
from agent.store.sqlite.shared import as_new, columns

_TURN_COLUMNS = columns(TurnRow)


class PostgresTurns:
    """Turns in PostgreSQL (implements :class:`~agent.store.protocol.Turns`).

    Args:
        context: what the table groups of the store share.
    """

    def __init__(self, context: StoreContext) -> None:
        self._db = context.db
        self._where = context.where
        self._clock = context.clock
        self._owner = context.owner
        self._liveness = context.liveness
        self._claims = context.claims

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
        """Write a running turn (with this store's fencing number of the session) and its
        prompt, deleting its queued row, in one transaction.

        ``parent_turn_id`` names, for a child agent's turn, the turn of the same session that
        delegated it; its prompt is then never recorded as a message.

        Raises:
            StoreNotFound: no such session.
            StoreFenced: another host holds the session.
            StoreError: the turn id exists already, the parent is no turn of the session, or
                the write failed.
        """
        now = self._clock()
        started = now if started_at is None else started_at

        def tx(cur: Cursor) -> TurnRow:
            fence = self._claims.hold(cur, session_id)
            if parent_turn_id is not None:
                cur.execute(
                    "SELECT 1 FROM turns WHERE id = %s AND session_id = %s",
                    (parent_turn_id, session_id),
                )
                if cur.fetchone() is None:
                    raise StoreError(
                        f"no parent turn {parent_turn_id!r} in the session", self._where
                    )
            cur.execute(
                "INSERT INTO turns (id, session_id, prompt, owner, fence, started_at, status,"
                " parent_turn_id) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
                " ON CONFLICT (id) DO NOTHING",
                (turn_id, session_id, prompt, self._owner, fence, started, RUNNING, parent_turn_id),
            )
            if cur.rowcount != 1:
                raise StoreError(f"a turn {turn_id!r} exists already", self._where)
            cur.execute("DELETE FROM queued_prompts WHERE turn_id = %s", (turn_id,))
            if record_prompt and parent_turn_id is None:
                user = NewMessage(ChatMessage(role="user", content=prompt))
                insert_messages(cur, session_id, [user], turn_id, now)
            else:
                cur.execute("UPDATE sessions SET updated_at = %s WHERE id = %s", (now, session_id))
            cur.execute(f"SELECT {_TURN_COLUMNS} FROM turns WHERE id = %s", (turn_id,))
            return TurnRow(*cur.fetchone())  # type: ignore[misc]

        return self._db.write(tx)

    def save_draft(self, turn_id: str, text: str, *, wait: bool = True) -> bool:
        """Checkpoint the reply streamed so far (see
        :meth:`agent.store.sqlite.turns.SqliteTurns.save_draft`).

        Args:
            turn_id: the open turn.
            text: the whole visible reply so far.
            wait: False to give up at once (returning False) when the database is away or the
                session's row is locked, instead of waiting.

        Returns:
            False when nothing was written (closed or unknown turn; busy or away with
            ``wait=False``; the session belongs to another host now).

        Raises:
            StoreUnreachable: away past the store's reconnect bound (``wait=True`` only).
        """

        def tx(cur: Cursor) -> bool:
            cur.execute("SELECT session_id FROM turns WHERE id = %s", (turn_id,))
            found = cur.fetchone()
            if found is None:
                return False
            self._claims.hold(cur, found[0])
            cur.execute(
                "UPDATE turns SET draft = %s WHERE id = %s AND ended_at IS NULL", (text, turn_id)
            )
            return cur.rowcount == 1

        try:
            return self._db.write(tx, wait=wait)
        except StoreFenced:
            return False
        except StoreUnreachable:
            if wait:
                raise
            return False
        except StoreError:
            if wait:
                raise
            return False  # a lock held past 50 ms, with wait=False

    def record_turn_end(
        self,
        turn_id: str,
        messages: Sequence[ChatMessage | NewMessage],
        outcome: TurnOutcome,
    ) -> bool:
        """Append a turn's messages and close it with its outcome, in one transaction, once.

        Returns:
            True when this call closed the turn; False when it was closed already (nothing
            is written: a late result never overwrites the booked outcome).

        Raises:
            StoreNotFound: no such turn.
            StoreFenced: another host holds the session (it recovered the turn, or will).
        """
        items = [as_new(m) for m in messages]

        def tx(cur: Cursor) -> bool:
            cur.execute("SELECT session_id FROM turns WHERE id = %s", (turn_id,))
            found = cur.fetchone()
            if found is None:
                raise StoreNotFound(f"no turn {turn_id!r}", self._where)
            session_id = found[0]
            self._claims.hold(cur, session_id)
            now = self._clock()
            cur.execute(
                "UPDATE turns SET ended_at = %s, status = %s, exit_reason = %s, stop_issuer = %s,"
                " stop_surface = %s, stop_reason = %s, prompt_tokens = %s,"
                " completion_tokens = %s, stop_closed_ms = %s, stop_exited_ms = %s,"
                " children_ended = %s, error = %s, reply = %s, draft = NULL"
                " WHERE id = %s AND ended_at IS NULL",
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
            if cur.rowcount != 1:
                return False
            if outcome.usage is not None:
                cur.execute(USAGE_UPDATE.format(p="%s"), usage_values(turn_id, outcome.usage))
            insert_messages(cur, session_id, items, turn_id, now)
            cur.execute("UPDATE sessions SET updated_at = %s WHERE id = %s", (now, session_id))
            return True

        return self._db.write(tx)

    def close_turn(self, turn_id: str, outcome: TurnOutcome) -> bool:
        """Close a turn with its outcome, exactly once, adding no message.

        Raises:
            StoreNotFound: no such turn.
        """
        return self.record_turn_end(turn_id, (), outcome)

    def get_turn(self, turn_id: str) -> TurnRow | None:
        """The turn, or None."""

        def q(cur: Cursor) -> TurnRow | None:
            cur.execute(f"SELECT {_TURN_COLUMNS} FROM turns WHERE id = %s", (turn_id,))
            row = cur.fetchone()
            return None if row is None else TurnRow(*row)

        return self._db.read(q)

    def list_turns(self, session_id: str) -> list[TurnRow]:
        """The session's turns, oldest first."""

        def q(cur: Cursor) -> list[TurnRow]:
            cur.execute(
                f"SELECT {_TURN_COLUMNS} FROM turns WHERE session_id = %s"
                " ORDER BY started_at, started_order",
                (session_id,),
            )
            return [TurnRow(*r) for r in cur.fetchall()]

        return self._db.read(q)

    def open_turns(self) -> list[TurnRow]:
        """Every turn without a terminal outcome, over all sessions."""

        def q(cur: Cursor) -> list[TurnRow]:
            cur.execute(
                f"SELECT {_TURN_COLUMNS} FROM turns WHERE ended_at IS NULL"
                " ORDER BY started_at, started_order"
            )
            return [TurnRow(*r) for r in cur.fetchall()]

        return self._db.read(q)

    def fence_of(self, turn_id: str) -> int | None:
        """The fencing number the turn was started with, or None for an unknown turn."""

        def q(cur: Cursor) -> int | None:
            cur.execute("SELECT fence FROM turns WHERE id = %s", (turn_id,))
            row = cur.fetchone()
            return None if row is None else int(row[0])

        return self._db.read(q)

    def recover_open_turns(self, *, include_live: bool = False) -> list[str]:
        """Close the turns of owners that are gone as ``failed(Crash)``, in one transaction.

        A turn's draft becomes a partial assistant message of it; its session's claim is taken
        over (a larger fencing number, so a late write of the gone owner is refused); stops
        still waiting for it are marked taken. A session another live owner holds is left to
        that owner. Turns of this store's owner, or of live owners, are left alone unless
        ``include_live``.

        Returns:
            the ids of the turns closed.
        """

        def tx(cur: Cursor) -> list[str]:
            cur.execute(
                f"SELECT {_TURN_COLUMNS} FROM turns WHERE ended_at IS NULL"
                " ORDER BY session_id, started_at, started_order"
            )
            rows = [TurnRow(*r) for r in cur.fetchall()]
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
                    self._claims.hold(cur, turn.session_id, gone=gone, force=include_live)
                except StoreFenced:
                    continue  # a live host holds the session now: its turns are its own
                pid = turn.owner.split(":")[1] if turn.owner.count(":") >= 2 else "?"
                cur.execute(
                    "UPDATE turns SET ended_at = %s, status = 'failed', exit_reason = %s,"
                    " error = %s, draft = NULL WHERE id = %s AND ended_at IS NULL",
                    (
                        now,
                        CRASH_EXIT_REASON,
                        f"desk stopped before this turn ended (process {pid} is gone)",
                        turn.id,
                    ),
                )
                if cur.rowcount != 1:
                    continue
                if turn.draft:
                    draft = NewMessage(
                        ChatMessage(role="assistant", content=turn.draft), partial=True
                    )
                    insert_messages(cur, turn.session_id, [draft], turn.id, now)
                closed.append(turn.id)
            if closed:
                cur.execute(
                    "UPDATE stop_requests SET taken_at = clock_timestamp(), taken_by = %s"
                    " WHERE turn_id = ANY(%s) AND taken_at IS NULL",
                    (self._owner, closed),
                )
            return closed

        return self._db.write(tx)
