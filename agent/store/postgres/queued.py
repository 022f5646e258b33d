"""Prompts waiting for their turn to start, in PostgreSQL: the ``queued_prompts`` table.

The rules are the SQLite store's (:mod:`agent.store.sqlite.queued`): a queued row lives until
its turn starts, the person removes it, the system drops it (a turn that never ran), or its
owner is gone (crash recovery, ``failed(Crash)``); each in one transaction that holds the
session's claim.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent.provider.types import ChatMessage
from agent.store.errors import StoreError, StoreFenced
from agent.store.postgres.database import Cursor
from agent.store.postgres.shared import StoreContext, insert_messages
from agent.store.rows import NewMessage, QueuedPromptRow, TurnOutcome
from agent.store.sqlite.queued import CRASH_OUTCOME
from agent.store.sqlite.shared import columns

_QUEUED_COLUMNS = columns(QueuedPromptRow)


class PostgresQueue:
    """Queued prompts in PostgreSQL (implements :class:`~agent.store.protocol.PromptQueue`).

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

    def queue_prompt(
        self, turn_id: str, session_id: str, prompt: str, queued_at: float | None = None
    ) -> bool:
        """Save a prompt waiting for its turn to start, behind the ones waiting before it.

        Returns:
            False when the turn exists already: nothing is written.

        Raises:
            StoreNotFound: no such session.
            StoreFenced: another host holds the session.
            StoreError: the prompt is queued already, or the write failed.
        """
        now = self._clock() if queued_at is None else queued_at

        def tx(cur: Cursor) -> bool:
            self._claims.hold(cur, session_id)
            cur.execute("SELECT 1 FROM turns WHERE id = %s", (turn_id,))
            if cur.fetchone():
                return False
            cur.execute("SELECT 1 FROM queued_prompts WHERE turn_id = %s", (turn_id,))
            if cur.fetchone():
                raise StoreError(f"a queued prompt {turn_id!r} exists already", self._where)
            cur.execute(
                "SELECT MAX(queued_at) FROM queued_prompts WHERE session_id = %s", (session_id,)
            )
            found = cur.fetchone()
            last = found[0] if found is not None else None
            cur.execute(
                f"INSERT INTO queued_prompts ({_QUEUED_COLUMNS}) VALUES (%s, %s, %s, %s, %s)",
                (turn_id, session_id, prompt, self._owner, now if last is None else max(now, last)),
            )
            return True

        return self._db.write(tx)

    def remove_queued_prompt(self, turn_id: str) -> bool:
        """Forget a queued prompt the person removed; False when it was not queued."""

        def tx(cur: Cursor) -> bool:
            cur.execute("SELECT session_id FROM queued_prompts WHERE turn_id = %s", (turn_id,))
            found = cur.fetchone()
            if found is None:
                return False
            self._claims.hold(cur, found[0])
            cur.execute("DELETE FROM queued_prompts WHERE turn_id = %s", (turn_id,))
            return cur.rowcount == 1

        return self._db.write(tx)

    def edit_queued_prompt(self, turn_id: str, prompt: str) -> bool:
        """Replace a queued prompt's text, keeping its place; False when it was not queued."""

        def tx(cur: Cursor) -> bool:
            cur.execute("SELECT session_id FROM queued_prompts WHERE turn_id = %s", (turn_id,))
            found = cur.fetchone()
            if found is None:
                return False
            self._claims.hold(cur, found[0])
            cur.execute(
                "UPDATE queued_prompts SET prompt = %s WHERE turn_id = %s", (prompt, turn_id)
            )
            return cur.rowcount == 1

        return self._db.write(tx)

    def queued_prompts(self, session_id: str | None = None) -> list[QueuedPromptRow]:
        """The session's queued prompts (every session's, with None), in queue order."""

        def q(cur: Cursor) -> list[QueuedPromptRow]:
            if session_id:
                cur.execute(
                    f"SELECT {_QUEUED_COLUMNS} FROM queued_prompts WHERE session_id = %s"
                    " ORDER BY queued_at, queued_order",
                    (session_id,),
                )
            else:
                cur.execute(
                    f"SELECT {_QUEUED_COLUMNS} FROM queued_prompts ORDER BY queued_at, queued_order"
                )
            return [QueuedPromptRow(*r) for r in cur.fetchall()]

        return self._db.read(q)

    def close_unsent_prompts(
        self, session_id: str, prompts: Sequence[tuple[str, str]], outcome: TurnOutcome
    ) -> list[str]:
        """Close prompts that will never run as turns that never ran, in order, in one
        transaction (see :meth:`agent.store.sqlite.queued.SqliteQueue.close_unsent_prompts`).

        Raises:
            StoreNotFound: no such session.
            StoreFenced: another host holds the session.
        """
        now = self._clock()

        def tx(cur: Cursor) -> list[str]:
            fence = self._claims.hold(cur, session_id)
            closed: list[str] = []
            for turn_id, prompt in prompts:
                cur.execute("SELECT queued_at FROM queued_prompts WHERE turn_id = %s", (turn_id,))
                found = cur.fetchone()
                started = now if found is None else found[0]
                row = QueuedPromptRow(turn_id, session_id, prompt, self._owner, started)
                if _close_unsent(cur, row, outcome, now, fence):
                    closed.append(turn_id)
            return closed

        return self._db.write(tx)

    def recover_queued_prompts(self, *, include_live: bool = False) -> list[str]:
        """Close the prompts owners that are gone left queued, as ``failed(Crash)`` turns that
        never ran, in queue order, in one transaction (see
        :meth:`agent.store.sqlite.queued.SqliteQueue.recover_queued_prompts`); their sessions'
        claims are taken over. A session with an open turn, or whose queue a live owner holds,
        keeps its queue unless ``include_live``.

        Returns:
            the ids of the turns written.
        """
        now = self._clock()

        def tx(cur: Cursor) -> list[str]:
            cur.execute(
                f"SELECT {_QUEUED_COLUMNS} FROM queued_prompts ORDER BY queued_at, queued_order"
            )
            rows = [QueuedPromptRow(*r) for r in cur.fetchall()]
            if not rows:
                return []
            cur.execute("SELECT DISTINCT session_id FROM turns WHERE ended_at IS NULL")
            held = {r[0] for r in cur.fetchall()}
            alive: dict[str, bool] = {}
            if not include_live:
                for row in rows:
                    if row.owner not in alive:
                        alive[row.owner] = row.owner == self._owner or self._liveness.is_alive(
                            row.owner
                        )
                    if alive[row.owner]:
                        held.add(row.session_id)
            gone = {owner for owner, live in alive.items() if not live}
            fences: dict[str, int] = {}
            closed: list[str] = []
            for session_id in sorted({r.session_id for r in rows} - held):
                try:
                    fences[session_id] = self._claims.hold(
                        cur, session_id, gone=gone, force=include_live
                    )
                except StoreFenced:
                    continue  # a live host holds the session now: its queue is its own
            for row in rows:
                fence = fences.get(row.session_id)
                if fence is not None and _close_unsent(cur, row, CRASH_OUTCOME, now, fence):
                    closed.append(row.turn_id)
            return closed

        return self._db.write(tx)


def _close_unsent(
    cur: Cursor, row: QueuedPromptRow, outcome: TurnOutcome, now: float, fence: int
) -> bool:
    """Write one turn that never ran, inside the caller's transaction; False when it exists."""
    cur.execute("DELETE FROM queued_prompts WHERE turn_id = %s", (row.turn_id,))
    cur.execute("SELECT 1 FROM turns WHERE id = %s", (row.turn_id,))
    if cur.fetchone():
        return False
    cur.execute(
        "INSERT INTO turns (id, session_id, prompt, owner, fence, started_at, ended_at, status,"
        " exit_reason, stop_issuer, stop_surface, stop_reason, error)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
        (
            row.turn_id,
            row.session_id,
            row.prompt,
            row.owner,
            fence,
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
    insert_messages(cur, row.session_id, [user], row.turn_id, now)
    return True
