"""The gateway's writes to the session store, and what happens when the store fails.

Every write goes through :meth:`Persistence.write`. A :class:`agent.store.StoreError` never
reaches the caller: the session is marked detached (so no later write leaves a gap in the saved
transcript), one ``session.store_error`` event tells the person in one line, and the session
goes on in memory. Order matters for "nothing seen is lost": the turn's outcome is written
before ``message.complete`` is published.

Streamed text is checkpointed as a draft about once a second by a thread of its own, never on
the turn's event loop (an fsync there would delay a stop).

A prompt is saved as waiting when it is submitted (:meth:`Persistence.prompt_submitted`), so a
crash cannot lose it while it is queued behind a running turn, or while its own turn compresses
first; when its turn starts, the waiting row goes in the same transaction as the turn row. One
the person removes is forgotten; those a system stop drops are saved as turns that never ran.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from itertools import groupby
from typing import TypeVar

from agent.events import TurnResult
from agent.provider.types import ChatMessage
from agent.stops import StopRequest
from agent.store import NOT_SENT_PREFIX, SessionStore, StoreError, TurnOutcome, turn_messages
from tui_gateway.events import Payload, StoreFailed
from tui_gateway.kinds import TurnStage
from tui_gateway.state import Session, Turn

T = TypeVar("T")

DRAFT_INTERVAL_S = 1.0
"""Seconds between two draft checkpoints of a streaming reply."""


class Persistence:
    """Writes sessions and turns to an optional store.

    Args:
        store: the store, or None to keep everything in memory.
        publish: sends a payload for a session; never blocks.
    """

    def __init__(
        self, store: SessionStore | None, publish: Callable[[Session, Payload], None]
    ) -> None:
        self.store = store
        self._publish = publish
        self._lock = threading.Lock()
        self._drafts: dict[str, list[str]] = {}
        self._dirty: set[str] = set()
        self._closed = threading.Event()
        self._thread: threading.Thread | None = None
        self.queue_lock = threading.Lock()
        """Held around handing a prompt to the session (queue or worker) and saving it, and
        around forgetting a removed one, so the saved queue has the in-memory order and a
        removed prompt is never saved after it was forgotten. Take it before any other lock."""
        if store is not None:
            self._thread = threading.Thread(
                target=self._draft_loop, name="desk-drafts", daemon=True
            )
            self._thread.start()

    def write(self, session: Session, action: str, fn: Callable[[SessionStore], T]) -> T | None:
        """Run ``fn(store)`` for ``session``; on a store failure detach the session, once.

        Returns:
            what ``fn`` returned, or None without a store, for a detached session, or on failure.
        """
        store = self.store
        if store is None or session.store_detached:
            return None
        try:
            return fn(store)
        except StoreError as exc:
            if not session.store_detached:
                session.store_detached = True
                message = f"{exc.message}; this session is kept in memory only from now on"
                self._publish(session, StoreFailed(action=action, message=message))
            return None

    def session_created(self, session: Session, cwd: str) -> None:
        """Save a new session with its first messages (the system prompt)."""
        self.write(
            session,
            "create the session",
            lambda s: s.sessions.create_session(
                session.session_id,
                title=session.title,
                model=session.model,
                cwd=cwd,
                messages=list(session.history),
            ),
        )

    def turn_started(self, session: Session, turn: Turn) -> None:
        """Save the running turn and its prompt, in one transaction (and a new title first)."""
        with session.lock:
            title = session.title if session.title_unsaved else None
            session.title_unsaved = False
        if title is not None:
            self.write(
                session,
                "name the session",
                lambda s: s.sessions.rename_session(session.session_id, title),
            )
        self.write(
            session,
            "save the prompt",
            lambda s: s.turns.start_turn(turn.turn_id, session.session_id, turn.prompt),
        )

    def prompt_submitted(self, session: Session, turn: Turn) -> None:
        """Save a submitted prompt as waiting for its turn to start (call with :attr:`queue_lock`
        held, right after it was queued or given to a worker).

        Nothing is written when it is done already (removed, dropped or finished), or when its
        turn has started (the store refuses then: the worker got there first).
        """
        with session.lock:
            if turn.state == TurnStage.DONE:
                return
        self.write(
            session,
            "save the prompt",
            lambda s: s.queue.queue_prompt(turn.turn_id, session.session_id, turn.prompt),
        )

    def prompts_removed(self, session: Session, turns: Sequence[Turn]) -> None:
        """Forget queued prompts the person removed: none of them is saved."""
        ids = [turn.turn_id for turn in turns]
        with self.queue_lock:
            self.write(
                session,
                "forget the removed prompt",
                lambda s: [s.queue.remove_queued_prompt(turn_id) for turn_id in ids],
            )

    def prompts_unsent(self, session: Session, dropped: Sequence[tuple[Turn, StopRequest]]) -> None:
        """Save queued prompts a system stop dropped as turns that never ran, in queue order.

        Each is closed as the stop booked it (``interrupted_by_system(<surface>)``, its issuer,
        surface and reason) with the error ``"not sent: <reason>"``. Call it once the turn
        that ran ahead of them is saved, so the prompts follow its reply.
        """
        for stop, group in groupby(dropped, key=lambda pair: pair[1]):
            self._close_unsent(session, [(t.turn_id, t.prompt) for t, _stop in group], stop)

    def _close_unsent(
        self, session: Session, prompts: list[tuple[str, str]], stop: StopRequest
    ) -> None:
        outcome = TurnOutcome.stopped(stop, error=NOT_SENT_PREFIX + stop.reason)
        self.write(
            session,
            "save the prompts that were not sent",
            lambda s: s.queue.close_unsent_prompts(session.session_id, prompts, outcome),
        )

    def note_text(self, turn_id: str, text: str) -> None:
        """Remember streamed text for the next draft checkpoint (cheap; any thread)."""
        if self.store is None or not text:
            return
        with self._lock:
            self._drafts.setdefault(turn_id, []).append(text)
            self._dirty.add(turn_id)

    def turn_ended(self, session: Session, turn: Turn, result: TurnResult) -> None:
        """Save the turn's messages and close its row, exactly once (a late call writes nothing)."""
        with self._lock:
            self._drafts.pop(turn.turn_id, None)
            self._dirty.discard(turn.turn_id)
        exited_ms = turn.exited_ms(result.stop) if result.stop is not None else None
        outcome = TurnOutcome.from_result(result, stop_exited_ms=exited_ms)
        self.write(
            session,
            "save the reply",
            lambda s: s.turns.record_turn_end(turn.turn_id, turn_messages(result), outcome),
        )

    def child_started(self, session: Session, child: Turn) -> None:
        """Save a running child agent's turn under its parent turn (no transcript message: a
        child's messages are its own, not the session's)."""
        assert child.child is not None
        parent = child.child.parent_turn_id
        self.write(
            session,
            "save the child agent",
            lambda s: s.turns.start_turn(
                child.turn_id, session.session_id, child.prompt, parent_turn_id=parent
            ),
        )

    def child_ended(self, session: Session, child: Turn, result: TurnResult) -> None:
        """Close a child agent's turn with its outcome, usage and final reply, exactly once."""
        exited_ms = child.exited_ms(result.stop) if result.stop is not None else None
        outcome = TurnOutcome.from_result(result, stop_exited_ms=exited_ms)
        outcome = replace(outcome, reply=result.text)
        self.write(
            session, "save the child agent", lambda s: s.turns.close_turn(child.turn_id, outcome)
        )

    def turn_abandoned(self, session: Session, turn: Turn, stop: StopRequest, error: str) -> None:
        """Close a turn whose worker outlived the shutdown bound, so it is never left open:
        as ``stop`` booked it, with ``error`` saying why it has no result."""
        outcome = TurnOutcome.stopped(stop, error=error)
        self.write(session, "close the turn", lambda s: s.turns.close_turn(turn.turn_id, outcome))

    def load_history(self, session: Session) -> list[ChatMessage] | None:
        """The saved transcript of ``session``, or None when it cannot be read."""
        return self.write(
            session, "load the session", lambda s: s.transcript.load_history(session.session_id)
        )

    def close(self, timeout_s: float = 2.0) -> None:
        """Write the last drafts, end the draft thread and close the store."""
        self._closed.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
        self._flush_drafts()
        if self.store is not None:
            with contextlib.suppress(StoreError):  # closing is best effort at the exit
                self.store.close()

    def _draft_loop(self) -> None:
        while not self._closed.wait(DRAFT_INTERVAL_S):
            self._flush_drafts()

    def _flush_drafts(self) -> None:
        store = self.store
        if store is None:
            return
        with self._lock:
            dirty = {t: "".join(self._drafts.get(t, [])) for t in self._dirty}
            self._dirty.clear()
        for turn_id, text in dirty.items():
            with contextlib.suppress(StoreError):  # best effort; the final write reports failures
                store.turns.save_draft(turn_id, text, wait=False)
