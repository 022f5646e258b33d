"""The gateway's writes to the session store: what is saved when, and never lost on the way.

Every write goes through :meth:`Persistence.write`, which hands it to the one writer thread
(:class:`~tui_gateway.sessions.store_writer.StoreWriter`): writes are made in the order they were
asked for; one the database cannot take now (locked by another program, a server gone away: a
:class:`~agent.store.StoreTransient`) waits and is tried again for as long as it takes, with
``session.store_waiting`` telling the person; only an error that will not pass, or a quit the
database outlasts, gives the session up, and then what it had not saved is exported to a file
whose path ``session.store_error`` shows. A session is never turned memory-only silently.

Order matters for "nothing seen is lost": the caller of a write waits until it is written (a
prompt is saved before ``prompt.submit`` returns, a turn's row before its agent runs, its
outcome before ``message.complete`` is published), except when the database is unavailable:
then the caller waits :data:`PATIENCE_S` at most, and not at all once its session's writes are
known to wait (the person sees the reply, the status bar says saving waits), and the write
follows when the database is free.

Streamed text is written as a draft by the writer thread every
:data:`~tui_gateway.sessions.store_writer.DRAFT_INTERVAL_S` while it streams, never on the turn's
event loop (an fsync there would delay a stop).

A prompt is saved as waiting when it is submitted (:meth:`Persistence.prompt_submitted`), so a
crash cannot lose it while it is queued behind a running turn, or while its own turn compresses
first; when its turn starts, the waiting row goes in the same transaction as the turn row. One
the person removes is forgotten; those a system stop drops are saved as turns that never ran.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from itertools import groupby
from pathlib import Path

from agent.events import ToolCompleted, ToolStarted, TurnResult
from agent.provider.types import ChatMessage
from agent.stamps import stamp
from agent.stops import StopRequest
from agent.store import (
    NOT_SENT_PREFIX,
    SavedCall,
    SessionStore,
    StoreError,
    TurnOutcome,
    turn_messages,
)
from contract.events import CompressionComplete, Payload
from tui_gateway.sessions.state import Session, Turn
from tui_gateway.sessions.store_writer import Apply, PendingWrite, StoreWriter
from tui_gateway.sessions.unsaved import Unsaved, UnsavedMessage
from tui_gateway.turns.kinds import TurnStage
from tui_gateway.wire.codec import dumps, encode

CLOSED_KEPT = 1024
"""Closed turns remembered so that a second close, or a tool call, of one writes nothing. Only
a worker the shutdown outlasted closes its turn, or reports a call, after the turn was closed
for it (:meth:`~tui_gateway.stops.booking.BookingOffice.close_stuck`), and no turn starts once the
shutdown began: far fewer turns than this close in between. Older ones are forgotten, so a
long-lived gateway does not keep an id for every turn it ever ran."""

PATIENCE_S = 1.0
"""Seconds a caller that needs its write done (a turn's start, a turn's close) waits for it
before going on without it (the write stays queued; the person is told saving waits)."""


class Persistence:
    """Writes sessions and turns to an optional store.

    Args:
        store: the store, or None to keep everything in memory.
        publish: sends a payload for a session; never blocks.
        unsaved_dir: where writes the gateway gives up on are exported (None: the default,
            see :mod:`tui_gateway.sessions.unsaved`).
        close_wait_s: how long :meth:`close` waits for a database that is unavailable before
            it exports what is still not written, in seconds.
    """

    def __init__(
        self,
        store: SessionStore | None,
        publish: Callable[[Session, Payload], None],
        *,
        unsaved_dir: Path | None = None,
        close_wait_s: float = 10.0,
    ) -> None:
        self.store = store
        self._close_wait_s = close_wait_s
        self._writer = (
            StoreWriter(store, publish, unsaved_dir=unsaved_dir) if store is not None else None
        )
        self._closed_turns: dict[str, None] = {}  # the last CLOSED_KEPT, oldest first
        self._closed_lock = threading.Lock()
        self._calls: dict[str, list[SavedCall]] = {}
        """Turn id -> its tool calls so far (while it runs), as :meth:`tool_event` saves them."""
        self.unsaved: dict[str, Path] = {}
        """Session id -> the file holding what could not be saved (filled by :meth:`close`)."""
        self.queue_lock = threading.Lock()
        """Held around handing a prompt to the session (queue or worker) and saving it, and
        around forgetting a removed one, so the saved queue has the in-memory order and a
        removed prompt is never saved after it was forgotten. Take it before any other lock."""

    def write(
        self,
        session: Session,
        action: str,
        fn: Apply,
        unsaved: Unsaved,
        *,
        wait: bool = True,
    ) -> bool:
        """Queue ``fn(store)`` for ``session``, behind every earlier write.

        Args:
            session: the session the write belongs to.
            action: what it is for, in the person's words.
            fn: the write.
            unsaved: what it saves, exported if the store is given up.
            wait: wait until it is written, up to :data:`PATIENCE_S` (not at all when the
                session's writes wait for the database already).

        Returns:
            True when it was written before this returned (never without ``wait``).
        """
        writer = self._writer
        if writer is None:
            return False
        pending = PendingWrite(session, action, fn, unsaved)
        writer.submit(pending)
        return writer.wait(pending, PATIENCE_S) if wait else False

    def waiting(self, session: Session) -> int:
        """How many writes of ``session`` are not in the store yet."""
        return self._writer.pending(session) if self._writer is not None else 0

    def forget(self, session: Session) -> None:
        """The session is deleted: drop its waiting writes and drafts."""
        if self._writer is not None:
            self._writer.forget(session)

    def session_created(self, session: Session, cwd: str) -> None:
        """Save a new session with its first messages (the system prompt)."""
        messages = list(session.history)
        self.write(
            session,
            "create the session",
            lambda s: s.sessions.create_session(
                session.session_id,
                title=session.title,
                model=session.model,
                cwd=cwd,
                messages=messages,
            ),
            Unsaved(
                "create the session",
                session.session_id,
                title=session.title,
                messages=tuple(UnsavedMessage.of(m) for m in messages),
            ),
        )

    def released(self, session: Session, *, wait: bool = False) -> None:
        """The session is live here no more (evicted, or let go): give its claim back, behind
        its other writes, so another desk may open it (``wait``: before this returns, up to
        :data:`PATIENCE_S`)."""
        sid = session.session_id
        self.write(
            session,
            "let the session go",
            lambda s: _release(s, sid),
            Unsaved("let the session go", sid),
            wait=wait,
        )

    def renamed(self, session: Session, title: str) -> None:
        """Save the live session's new title."""
        self.write(
            session,
            "rename the session",
            lambda s: s.sessions.rename_session(session.session_id, title),
            Unsaved("rename the session", session.session_id, title=title),
        )

    def model_set(self, session: Session, model: str) -> None:
        """Save the model the live session goes on with (``/model``): a resume uses it,
        whether a turn ran with it or not."""
        self.write(
            session,
            "save the model",
            lambda s: s.sessions.set_session_model(session.session_id, model),
            Unsaved("save the model", session.session_id),
        )

    def turn_started(self, session: Session, turn: Turn, model: str = "") -> None:
        """Save the running turn and its prompt, in one transaction (and a new title first),
        with ``model``, the model it runs with ("" unknown), which the session's row then
        names too (a resumed session, and the saved sessions' list, go on with it)."""
        with session.lock:
            title = session.title if session.title_unsaved else None
            session.title_unsaved = False
        if title is not None:
            self.renamed(session, title)
        started = time.time()
        prompt = UnsavedMessage("user", turn.prompt)
        self.write(
            session,
            "save the prompt",
            lambda s: s.turns.start_turn(
                turn.turn_id, session.session_id, turn.prompt, started, model=model or None
            ),
            Unsaved("save the prompt", session.session_id, turn.turn_id, (prompt,)),
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
        queued = time.time()
        prompt = UnsavedMessage("user", turn.prompt)
        self.write(
            session,
            "save the prompt",
            lambda s: s.queue.queue_prompt(turn.turn_id, session.session_id, turn.prompt, queued),
            Unsaved("save the queued prompt", session.session_id, turn.turn_id, (prompt,)),
        )

    def prompts_removed(self, session: Session, turns: Sequence[Turn]) -> None:
        """Forget queued prompts the person removed: none of them is saved."""
        ids = [turn.turn_id for turn in turns]
        with self.queue_lock:
            self.write(
                session,
                "forget the removed prompt",
                lambda s: [s.queue.remove_queued_prompt(turn_id) for turn_id in ids],
                Unsaved("forget the removed prompts", session.session_id),
            )

    def unsent_dismissed(self, session: Session, turn_id: str) -> bool:
        """The person dismissed a prompt saved as not sent (✕ on it where it is offered
        again): saved, so a resume offers it no more.

        Returns:
            True when the store marked it (a turn closed as not sent, not dismissed before);
            False otherwise, or when the store did not answer in time.
        """
        marked: list[bool] = []
        self.write(
            session,
            "forget the prompt not sent",
            lambda s: marked.append(s.turns.dismiss_unsent(turn_id)),
            Unsaved("forget the prompt not sent", session.session_id, turn_id),
        )
        return marked == [True]

    def prompt_edited(self, session: Session, turn: Turn) -> None:
        """Save the new text of a queued prompt the person edited (call with
        :attr:`queue_lock` held, right after the edit)."""
        text = turn.prompt
        self.write(
            session,
            "save the edited prompt",
            lambda s: s.queue.edit_queued_prompt(turn.turn_id, text),
            Unsaved(
                "save the edited prompt",
                session.session_id,
                turn.turn_id,
                (UnsavedMessage("user", text),),
            ),
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
            Unsaved(
                "save the prompts that were not sent",
                session.session_id,
                messages=tuple(UnsavedMessage("user", text) for _id, text in prompts),
                exit_reason=outcome.exit_reason,
                error=outcome.error,
            ),
        )

    def note_text(self, session: Session, turn_id: str, text: str) -> None:
        """Remember streamed text for the turn's next draft (cheap; any thread)."""
        if self._writer is not None and text:
            self._writer.note_text(session, turn_id, text)

    def draft_text(self, turn_id: str) -> str:
        """The reply text streamed so far for a running turn ("" without a store or text)."""
        return self._writer.draft_text(turn_id) if self._writer is not None else ""

    def tool_event(
        self, session: Session, turn_id: str, event: ToolStarted | ToolCompleted
    ) -> None:
        """Save the turn's tool calls as they stand: a call when it starts (name, arguments,
        running), before it runs, and again once it has its result; a desk killed meanwhile
        leaves them for crash recovery (:mod:`agent.store.calls`). Called on the worker thread
        of the turn (or child agent) ``turn_id``."""
        if isinstance(event, ToolStarted):
            started = SavedCall(event.call_id, event.name, event.arguments)
            self._save_calls(session, turn_id, lambda calls: [*calls, started], wait=True)
        else:
            done = SavedCall(event.call_id, event.name, "", event.content, event.is_error)
            self._save_calls(session, turn_id, _answered(done), wait=False)

    def approval_wait(self, session: Session, turn_id: str, call_id: str, waiting: bool) -> None:
        """Save that the call ``call_id`` of ``turn_id`` waits for the person's approval
        (``waiting``), or that the wait is over, before the person is asked (or before the
        approved call runs): a desk killed while it waits comes back with the call answered
        "not run" (:data:`~agent.store.NOT_ANSWERED`). Called on the turn's worker thread."""
        self._save_calls(session, turn_id, _waiting(call_id, waiting), wait=True)

    def _save_calls(
        self,
        session: Session,
        turn_id: str,
        change: Callable[[list[SavedCall]], list[SavedCall]],
        *,
        wait: bool,
    ) -> None:
        """Apply ``change`` to the turn's calls and queue the save (nothing once it ended)."""
        with self._closed_lock:
            if turn_id in self._closed_turns:
                return
            calls = self._calls.setdefault(turn_id, [])
            calls[:] = change(calls)
            saved = tuple(calls)
        self.write(
            session,
            "save the tool call",
            lambda s: s.turns.save_calls(turn_id, saved),
            Unsaved("save the tool call", session.session_id, turn_id),
            wait=wait,
        )

    def turn_ended(self, session: Session, turn: Turn, result: TurnResult) -> None:
        """Save the turn's messages and close its row, exactly once (a later call writes
        nothing)."""
        with self._closed_lock:
            if turn.turn_id in self._closed_turns:
                return
            self._remember_closed(turn.turn_id)
            self._calls.pop(turn.turn_id, None)
        if self._writer is not None:
            self._writer.end_draft(turn.turn_id)
        exited_ms = turn.exited_ms(result.stop) if result.stop is not None else None
        outcome = TurnOutcome.from_result(result, stop_exited_ms=exited_ms, ended_at=time.time())
        messages = turn_messages(result)
        self.write(
            session,
            "save the reply",
            lambda s: s.turns.record_turn_end(turn.turn_id, messages, outcome),
            Unsaved(
                "save the reply",
                session.session_id,
                turn.turn_id,
                tuple(UnsavedMessage.of(m.message, partial=m.partial) for m in messages),
                exit_reason=outcome.exit_reason,
                error=outcome.error,
            ),
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
            Unsaved("save the child agent", session.session_id, child.turn_id),
        )

    def _remember_closed(self, turn_id: str) -> None:
        """Note a closed turn, forgetting the oldest past :data:`CLOSED_KEPT` (lock held)."""
        self._closed_turns[turn_id] = None
        if len(self._closed_turns) > CLOSED_KEPT:
            del self._closed_turns[next(iter(self._closed_turns))]

    def child_ended(self, session: Session, child: Turn, result: TurnResult) -> None:
        """Close a child agent's turn with its outcome, usage and final reply, exactly once."""
        with self._closed_lock:
            self._remember_closed(child.turn_id)
            self._calls.pop(child.turn_id, None)
        if self._writer is not None:
            self._writer.end_draft(child.turn_id)
        exited_ms = child.exited_ms(result.stop) if result.stop is not None else None
        outcome = TurnOutcome.from_result(result, stop_exited_ms=exited_ms, ended_at=time.time())
        outcome = replace(outcome, reply=result.text)
        self.write(
            session,
            "save the child agent's outcome",
            lambda s: s.turns.close_turn(child.turn_id, outcome),
            Unsaved(
                "save the child agent's outcome",
                session.session_id,
                child.turn_id,
                (UnsavedMessage("assistant", result.text),) if result.text else (),
                exit_reason=outcome.exit_reason,
                error=outcome.error,
            ),
        )

    def compression_ended(self, session: Session, outcome: CompressionComplete) -> None:
        """Keep a compression's outcome among the session's messages, after the ones saved
        before it (:meth:`~agent.store.protocol.Messages.append_event`), so a resumed session
        shows its line again; queued behind the session's writes, never waited for (the
        outcome is shown at once)."""
        sid, text = session.session_id, dumps(encode(outcome))
        action = "save the compression's outcome"
        self.write(
            session,
            action,
            lambda s: s.transcript.append_event(sid, outcome.TYPE, text, turn_id=outcome.turn_id),
            Unsaved(action, sid, outcome.turn_id, exit_reason=str(outcome.status)),
            wait=False,
        )

    def load_history(self, session: Session) -> list[ChatMessage] | None:
        """The saved transcript of ``session``, or None when it cannot be read."""
        store = self.store
        if store is None:
            return None
        try:
            return store.transcript.load_history(session.session_id)
        except StoreError:
            return None

    def quitting(self) -> None:
        """The gateway shuts down: the writes from now on (the stopped turns' replies, the
        released claims) are made durable together when the store closes, not with an fsync
        each (:meth:`~agent.store.SessionStore.defer_sync`)."""
        if self.store is not None:
            with contextlib.suppress(StoreError):  # then each write syncs, as before
                self.store.defer_sync()

    def close(self) -> dict[str, Path]:
        """Write what is queued (waiting for the database up to ``close_wait_s``), then close
        the store; what could not be written is exported.

        Returns:
            session id -> the file holding what could not be saved (empty when all was).
        """
        if self._writer is not None:
            self.unsaved = self._writer.close(self._close_wait_s)
        stamp("store.writes_done")
        if self.store is not None:
            with contextlib.suppress(StoreError):  # closing is best effort at the exit
                self.store.close()
        return self.unsaved


def _release(store: SessionStore, session_id: str) -> None:
    """Give a session's claim back; a store that cannot take it now loses nothing (a claim
    of a process that is gone is free to take anyway)."""
    with contextlib.suppress(StoreError):
        store.release_session(session_id)


def _answered(done: SavedCall) -> Callable[[list[SavedCall]], list[SavedCall]]:
    """The change that gives the call ``done.id`` its result (``done.content``, ``is_error``)."""
    return lambda calls: [
        replace(c, content=done.content, is_error=done.is_error, waiting=False)
        if c.id == done.id
        else c
        for c in calls
    ]


def _waiting(call_id: str, waiting: bool) -> Callable[[list[SavedCall]], list[SavedCall]]:
    """The change that marks the call ``call_id`` as waiting for its approval, or not."""
    return lambda calls: [replace(c, waiting=waiting) if c.id == call_id else c for c in calls]
