"""Checkpoints and ``/undo``: each turn's changes to the workspace, recorded and undone.

Every turn's agent gets a :class:`~agent.checkpoints.recorder.TurnRecorder` whose records go
to the session store through :class:`~tui_gateway.sessions.persistence.Persistence` (in order with
the session's other writes, and written before the tool call changes the file). A child agent's
changes are its root turn's: undoing a turn undoes what its children did too.

:meth:`Checkpointing.undo` puts back the files of the newest turn not undone yet
(:mod:`agent.checkpoints.undo`) and marks it undone; again, the one before. A turn one of whose
files changed since (or could not be written back) is not marked: it stays the next to undo.
It refuses while a turn runs in the session (that turn's changes are still coming).
:meth:`Checkpointing.diff` is the session's diff. Both read the store, so they work on a session
resumed after a restart.
"""

from __future__ import annotations

import threading
from pathlib import Path

from agent.checkpoints.recorder import TurnRecorder
from agent.checkpoints.undo import last_step, session_changes, undo_files
from agent.store import StoreError
from agent.store.rows import CheckpointRow
from contract.errors import GatewayError
from contract.results import SessionDiff, UndoResult
from tui_gateway.sessions.persistence import Persistence
from tui_gateway.sessions.session_table import SessionTable
from tui_gateway.sessions.state import Session
from tui_gateway.sessions.unsaved import Unsaved

NO_STORE = "undo needs the session store, and this desk runs without one"


class _StoreSink:
    """A turn's checkpoint records, written through the session's store writer."""

    def __init__(self, persistence: Persistence, session: Session, turn_id: str) -> None:
        self._persistence = persistence
        self._session = session
        self._turn_id = turn_id

    def record_before(self, path: str, before_data: bytes | None) -> None:
        sid, turn = self._session.session_id, self._turn_id
        self._persistence.write(
            self._session,
            "save a checkpoint",
            lambda s: s.checkpoints.record_before(sid, turn, path, before_data),
            Unsaved("save a checkpoint", sid, turn),
        )

    def record_after(self, path: str, after_sha: str) -> None:
        turn = self._turn_id
        self._persistence.write(
            self._session,
            "save a checkpoint",
            lambda s: s.checkpoints.record_after(turn, path, after_sha),
            Unsaved("save a checkpoint", self._session.session_id, turn),
        )


class Checkpointing:
    """The gateway's checkpoints.

    Args:
        table: the live sessions.
        persistence: the store's writes (no store: nothing is recorded, undo refuses).
        cwd: the workspace.
    """

    def __init__(self, table: SessionTable, persistence: Persistence, cwd: Path) -> None:
        self._table = table
        self._persistence = persistence
        self._cwd = cwd
        self._lock = threading.Lock()  # one undo at a time: two must not undo one turn twice

    def recorder(self, session: Session, turn_id: str) -> TurnRecorder | None:
        """The recorder of a turn (``turn_id``: the root turn of a child agent), or None
        when there is no store."""
        if self._persistence.store is None:
            return None
        return TurnRecorder(self._cwd, _StoreSink(self._persistence, session, turn_id))

    def _rows(self, session_id: str) -> list[CheckpointRow]:
        store = self._persistence.store
        if store is None:
            raise GatewayError(NO_STORE)
        try:
            return store.checkpoints.checkpoint_files(session_id)
        except StoreError as exc:
            raise GatewayError(f"cannot read the checkpoints: {exc}") from exc

    def undo(self, session_id: str) -> UndoResult:
        """``session.undo``: undo the newest turn of the session that changed files.

        Raises:
            GatewayError: a turn runs in the session, no store, or the store failed.
        """
        with self._lock:
            return self._undo(session_id)

    def _undo(self, session_id: str) -> UndoResult:
        session = self._table.find(session_id)
        if session is not None:
            with session.lock:
                running = session.running is not None or bool(session.live_children())
            if running:
                raise GatewayError(
                    "a turn is running in this session: stop it or let it end, then undo"
                )
        rows = self._rows(session_id)
        step = last_step(rows)
        if not step:
            return UndoResult(undone=False)
        outcome = undo_files(step, self._cwd)
        store = self._persistence.store
        assert store is not None  # _rows checked
        if outcome.complete:
            try:
                store.checkpoints.mark_undone(session_id, step[0].step)
            except StoreError as exc:
                why = f"the files were put back but not marked undone: {exc}"
                raise GatewayError(why) from exc
        turn_id = step[0].turn_id
        remaining = len({r.step for r in rows if not r.undone}) - (1 if outcome.complete else 0)
        prompt = ""
        try:
            found = store.turns.get_turn(turn_id)
            prompt = found.prompt.strip().split("\n")[0] if found is not None else ""
        except StoreError:
            pass
        return UndoResult(
            undone=outcome.complete,
            turn_id=turn_id,
            prompt=prompt,
            diff=outcome.diff,
            restored=outcome.restored,
            removed=outcome.removed,
            not_restored=outcome.not_restored,
            remaining=remaining,
        )

    def diff(self, session_id: str) -> SessionDiff:
        """``session.diff``: what the session's turns changed (undone ones left out).

        Raises:
            GatewayError: no store, or the store failed.
        """
        changes = session_changes(self._rows(session_id), self._cwd)
        return SessionDiff(changes.diff, changes.files, changes.added, changes.removed)
