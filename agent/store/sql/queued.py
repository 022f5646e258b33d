"""Prompts waiting for their turn to start, saved when submitted so a crash or a quit loses none.

The ``queued_prompts`` table. A prompt waits while it is queued behind the running turn, or
while its own turn has not started yet (a compression may run first). Its row lives in
``queued_prompts`` until exactly one of these happens, each in one transaction that holds the
session:

- its turn starts: :meth:`~agent.store.sql.turns.SqlTurns.start_turn` writes the turn and
  its user message and deletes the row, together (so a crash can neither lose nor double it);
- the person removes it: :meth:`SqlQueue.remove_queued_prompt` deletes it, keeping nothing;
  (an edit, :meth:`SqlQueue.edit_queued_prompt`, only replaces its text, in its place);
- the system drops it (a quit, a disconnect, an eviction):
  :meth:`SqlQueue.close_unsent_prompts` turns it into a closed turn that never ran;
- its owner is gone: :meth:`SqlQueue.recover_queued_prompts` (crash recovery) does the same,
  as ``failed(Crash)``.

A turn that never ran has its prompt as its one user message, at the place the prompt would
have taken, and an error beginning with :data:`~agent.store.rows.NOT_SENT_PREFIX`.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent.provider.types import ChatMessage
from agent.store.errors import StoreError, StoreFenced
from agent.store.rows import (
    CRASH_EXIT_REASON,
    NOT_SENT_CRASH_ERROR,
    NewMessage,
    QueuedPromptRow,
    TurnOutcome,
)
from agent.store.sql.core import Core, Tx
from agent.store.sql.messages import columns, insert_messages

_QUEUED_COLUMNS = columns(QueuedPromptRow)

CRASH_OUTCOME = TurnOutcome(
    status="failed", exit_reason=CRASH_EXIT_REASON, error=NOT_SENT_CRASH_ERROR
)
"""The outcome of a queued prompt whose process died before it ran."""


class SqlQueue:
    """Queued prompts (implements :class:`~agent.store.protocol.PromptQueue`).

    Args:
        core: what the table groups of the store share.
    """

    def __init__(self, core: Core) -> None:
        self._e = core.engine
        self._where = core.where
        self._clock = core.clock
        self._owner = core.owner
        self._liveness = core.liveness
        self._order = core.engine.dialect.queued_order

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
            StoreFenced: another owner holds the session.
            StoreError: the prompt is queued already, or the write failed (nothing was written).
        """
        now = self._clock() if queued_at is None else queued_at

        def tx(t: Tx) -> bool:
            self._e.hold(t, session_id)
            if t.one("SELECT 1 FROM turns WHERE id = ?", (turn_id,)):
                return False
            if t.one("SELECT 1 FROM queued_prompts WHERE turn_id = ?", (turn_id,)):
                raise StoreError(f"a queued prompt {turn_id!r} exists already", self._where)
            found = t.one(
                "SELECT MAX(queued_at) FROM queued_prompts WHERE session_id = ?", (session_id,)
            )
            last = found[0] if found is not None else None
            t.run(
                f"INSERT INTO queued_prompts ({_QUEUED_COLUMNS}) VALUES (?, ?, ?, ?, ?)",
                (turn_id, session_id, prompt, self._owner, now if last is None else max(now, last)),
            )
            return True

        return self._e.write(tx)

    def remove_queued_prompt(self, turn_id: str) -> bool:
        """Forget a queued prompt the person removed: nothing of it is kept.

        Returns:
            False when it was not queued (it started, was closed, or was never saved).
        """
        return self._change(turn_id, "DELETE FROM queued_prompts WHERE turn_id = ?", ())

    def edit_queued_prompt(self, turn_id: str, prompt: str) -> bool:
        """Replace the text of a queued prompt the person edited; its place stays.

        Returns:
            False when it was not queued (it started, was closed, or was never saved).
        """
        return self._change(
            turn_id, "UPDATE queued_prompts SET prompt = ? WHERE turn_id = ?", (prompt,)
        )

    def _change(self, turn_id: str, sql: str, values: tuple[object, ...]) -> bool:
        def tx(t: Tx) -> bool:
            found = t.one("SELECT session_id FROM queued_prompts WHERE turn_id = ?", (turn_id,))
            if found is None:
                return False
            self._e.hold(t, found[0])
            return t.run(sql, (*values, turn_id)) == 1

        return self._e.write(tx)

    def queued_prompts(self, session_id: str | None = None) -> list[QueuedPromptRow]:
        """The session's queued prompts (every session's, with None), in queue order."""
        where, args = ("WHERE session_id = ?", (session_id,)) if session_id else ("", ())
        rows = self._e.read(
            lambda t: t.all(
                f"SELECT {_QUEUED_COLUMNS} FROM queued_prompts {where}"
                f" ORDER BY queued_at, {self._order}",
                args,
            )
        )
        return [QueuedPromptRow(*r) for r in rows]

    def close_unsent_prompts(
        self, session_id: str, prompts: Sequence[tuple[str, str]], outcome: TurnOutcome
    ) -> list[str]:
        """Close prompts that will never run as turns that never ran, in order, in one transaction.

        Each becomes a closed turn with ``outcome`` (started when it was queued, if its queued
        row says when) and one user message at the session's next position, as
        :meth:`~agent.store.sql.turns.SqlTurns.start_turn` would have written it; its
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
            StoreFenced: another owner holds the session.
            StoreError: the write failed (nothing was written).
        """
        now = self._clock()

        def tx(t: Tx) -> list[str]:
            fence = self._e.hold(t, session_id)
            closed: list[str] = []
            for turn_id, prompt in prompts:
                found = t.one("SELECT queued_at FROM queued_prompts WHERE turn_id = ?", (turn_id,))
                started = now if found is None else found[0]
                row = QueuedPromptRow(turn_id, session_id, prompt, self._owner, started)
                if self._close_unsent(t, row, outcome, now, fence):
                    closed.append(turn_id)
            return closed

        return self._e.write(tx)

    def recover_queued_prompts(self, *, include_live: bool = False) -> list[str]:
        """Close the prompts owners that are gone left queued, as ``failed(Crash)`` turns that
        never ran, in queue order, in one transaction; their sessions are taken over.

        The error reads :data:`~agent.store.rows.NOT_SENT_CRASH_ERROR`. A session with an open
        turn keeps its queue (run this after
        :meth:`~agent.store.sql.turns.SqlTurns.recover_open_turns`, so only live turns are
        open), and so does a session whose queue a live owner (another desk, or this store)
        holds, unless ``include_live``.

        Returns:
            the ids of the turns written.
        """
        now = self._clock()

        def tx(t: Tx) -> list[str]:
            rows = [
                QueuedPromptRow(*r)
                for r in t.all(
                    f"SELECT {_QUEUED_COLUMNS} FROM queued_prompts"
                    f" ORDER BY queued_at, {self._order}"
                )
            ]
            if not rows:
                return []
            held = {
                r[0] for r in t.all("SELECT DISTINCT session_id FROM turns WHERE ended_at IS NULL")
            }
            alive: dict[str, bool] = {}
            for row in rows:
                if row.owner not in alive:
                    alive[row.owner] = row.owner == self._owner or self._liveness.is_alive(
                        row.owner
                    )
                if not include_live and alive[row.owner]:
                    held.add(row.session_id)
            gone = {owner for owner, live in alive.items() if not live}
            fences: dict[str, int] = {}
            for session_id in sorted({r.session_id for r in rows} - held):
                try:
                    fences[session_id] = self._e.hold(t, session_id, gone=gone, force=include_live)
                except StoreFenced:
                    continue  # a live owner holds the session now: its queue is its own
            closed: list[str] = []
            for row in rows:
                fence = fences.get(row.session_id)
                if fence is not None and self._close_unsent(t, row, CRASH_OUTCOME, now, fence):
                    closed.append(row.turn_id)
            return closed

        return self._e.write(tx)

    def _close_unsent(
        self, t: Tx, row: QueuedPromptRow, outcome: TurnOutcome, now: float, fence: int
    ) -> bool:
        """Write one turn that never ran, inside the caller's transaction; False when it exists."""
        t.run("DELETE FROM queued_prompts WHERE turn_id = ?", (row.turn_id,))
        if t.one("SELECT 1 FROM turns WHERE id = ?", (row.turn_id,)):
            return False
        extra, values = (", fence", (fence,)) if self._e.dialect.turn_fence else ("", ())
        t.run(
            "INSERT INTO turns (id, session_id, prompt, owner, started_at, ended_at, status,"
            f" exit_reason, stop_issuer, stop_surface, stop_reason, error{extra})"
            f" VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?{', ?' * len(values)})",
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
            )
            + values,
        )
        user = NewMessage(ChatMessage(role="user", content=row.prompt))
        insert_messages(t, row.session_id, [user], row.turn_id, now)
        return True
