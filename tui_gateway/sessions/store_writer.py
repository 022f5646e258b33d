"""The gateway's one writer thread: every store write in order, delayed while the database is
unavailable, never dropped; drafts of streaming replies written often, off the turn's loop.

The rule, for every backend: a write that meets a :class:`~agent.store.StoreTransient` (SQLite:
another program holds the lock past the busy timeout; a database server: the connection is
gone) stays at the head of the queue and is tried again with a growing pause (50 ms doubling to
2 s), for as long as it takes; the writes behind it wait, so the saved order is the order they
were made in. The sessions whose writes wait are told once (``session.store_waiting``, waiting),
and again when all of theirs are written (not waiting). Only an error that will not pass by
itself (read-only, disk full, a damaged file, a session deleted elsewhere) or a quit that the
database outlasts ends it: then what the session has not saved is exported
(:mod:`tui_gateway.sessions.unsaved`), the session is kept in memory only from then on (and later
writes are exported too), and ``session.store_error`` says so once, with the file's path. A write
that raises what no store raises (a bug) is handled the same way for its session; anything else the
thread did not expect is logged in one line, and the thread goes on.

Drafts: streamed text is noted by the turn (:meth:`StoreWriter.note_text`, cheap, any thread)
and written by this thread at most every :data:`DRAFT_INTERVAL_S` while it streams (coalesced:
one write per turn per interval, whatever the rate), with the store's fast checkpoint (no fsync:
it survives a killed process); never while the session has writes waiting, since its turn row
may not be written yet.

Every other write is committed, its waiter told, and only then the disk synced
(:meth:`~agent.store.SessionStore.sync_after`): what the waiter shows next (a turn's end) is
safe from a killed process when it is shown, and from a power cut one fsync later.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from agent.store import SessionStore, StoreError, StoreTransient
from agent.valid_text import valid_text
from contract.events import Payload, StoreFailed, StoreWaiting
from tui_gateway.sessions.state import Session
from tui_gateway.sessions.unsaved import Unsaved, UnsavedMessage, export

_log = logging.getLogger(__name__)

DRAFT_INTERVAL_S = 0.05
"""Seconds between two draft writes of one streaming reply (so a kill loses at most this much
of what was on screen, plus the write itself)."""

RETRY_FIRST_S = 0.05
"""Pause before the first retry of a write the database could not take, in seconds."""

RETRY_MAX_S = 2.0
"""Longest pause between two retries, in seconds (each pause doubles up to it)."""

WAITING = "saving is waiting for the database"
"""The line a frontend shows while a session's writes wait."""

Apply = Callable[[SessionStore], object]
"""One write: called with the store, on the writer thread."""


@dataclass(slots=True, eq=False)
class PendingWrite:
    """A write the gateway made, not yet in the store.

    Attributes:
        session: the session it belongs to.
        action: what it is for, in the person's words (``"save the reply"``).
        apply: does it; raises :class:`~agent.store.StoreError` when the store fails.
        unsaved: what it saves, for the export when the store is given up.
        done: set once it is written (or given up).
        result: what ``apply`` returned, once written.
        written: True once it is in the store.
    """

    session: Session
    action: str
    apply: Apply
    unsaved: Unsaved
    done: threading.Event = field(default_factory=threading.Event)
    result: object = None
    written: bool = False


@dataclass(slots=True, eq=False)
class _Draft:
    session: Session
    pieces: list[str] = field(default_factory=list)
    dirty: bool = False


class StoreWriter:
    """Writes to ``store`` on a thread of its own (see the module's rules).

    Args:
        store: the store.
        publish: sends a payload for a session; never blocks.
        unsaved_dir: where exports go (None: :func:`tui_gateway.sessions.unsaved.default_folder`).
        draft_interval_s: seconds between two draft writes of one reply.
        retry_s: the first and the longest pause between two tries of a write the database
            could not take, in seconds.
    """

    def __init__(
        self,
        store: SessionStore,
        publish: Callable[[Session, Payload], None],
        *,
        unsaved_dir: Path | None = None,
        draft_interval_s: float = DRAFT_INTERVAL_S,
        retry_s: tuple[float, float] = (RETRY_FIRST_S, RETRY_MAX_S),
    ) -> None:
        self._store = store
        self._publish = publish
        self._unsaved_dir = unsaved_dir
        self._interval = draft_interval_s
        self._retry_first, self._retry_max = retry_s
        self._cond = threading.Condition()
        self._queue: deque[PendingWrite] = deque()
        self._drafts: dict[str, _Draft] = {}
        self._dirty = 0
        self._last_drafts = -math.inf  # never: the first draft goes at once
        self._waiting: dict[str, Session] = {}  # sessions told that saving waits
        self._exports: dict[str, Path] = {}
        self._seen: dict[str, _Seen] = {}  # per session: the messages exported already
        self._closing = False
        self._stopped = False
        self._thread = threading.Thread(target=self._loop, name="desk-store-writer", daemon=True)
        self._thread.start()

    # -- the gateway's side --------------------------------------------------------------------

    def submit(self, write: PendingWrite) -> None:
        """Queue ``write`` behind every earlier one (a given-up session's is exported at once)."""
        with self._cond:
            stopped, detached = self._stopped, write.session.store_detached
            if not (stopped or detached):
                self._queue.append(write)
                self._cond.notify_all()
        if stopped or detached:
            self._give_up(write.session, [write], "the session database was closed")

    def wait(self, write: PendingWrite, patience_s: float) -> bool:
        """Wait up to ``patience_s`` seconds for ``write``; True when it was written.

        When it is not written by then, its session is told that saving waits (the write
        stays queued and will be written); once it has been told, this does not wait at all.
        """
        with self._cond:
            told = write.session.session_id in self._waiting
        if write.done.wait(0 if told else patience_s):
            return write.written
        self._announce([write.session], WAITING)
        return False

    def pending(self, session: Session) -> int:
        """How many writes of ``session`` wait to be written."""
        with self._cond:
            return sum(1 for w in self._queue if w.session is session)

    def forget(self, session: Session) -> None:
        """Drop the session's waiting writes and drafts (it was deleted: nothing to keep)."""
        with self._cond:
            dropped = [w for w in self._queue if w.session is session]
            self._queue = deque(w for w in self._queue if w.session is not session)
            for turn_id in [t for t, d in self._drafts.items() if d.session is session]:
                self._forget_draft(turn_id)
            self._waiting.pop(session.session_id, None)
        for write in dropped:
            write.done.set()

    def note_text(self, session: Session, turn_id: str, text: str) -> None:
        """Remember streamed text of ``turn_id`` for its next draft (cheap; any thread)."""
        with self._cond:
            draft = self._drafts.get(turn_id)
            if draft is None:
                draft = self._drafts[turn_id] = _Draft(session)
            draft.pieces.append(text)
            if not draft.dirty:
                draft.dirty = True
                self._dirty += 1
                if self._dirty == 1:
                    self._cond.notify_all()

    def draft_text(self, turn_id: str) -> str:
        """All text streamed for ``turn_id`` so far ("" when none)."""
        with self._cond:
            draft = self._drafts.get(turn_id)
            return "".join(draft.pieces) if draft is not None else ""

    def end_draft(self, turn_id: str) -> None:
        """The turn's close is queued: its draft is not written any more."""
        with self._cond:
            self._forget_draft(turn_id)

    def close(self, timeout_s: float) -> dict[str, Path]:
        """Write what is queued (waiting up to ``timeout_s`` seconds for the database), then
        stop; what is still not written is exported.

        Returns:
            the export file of each session that has one (session id -> path).
        """
        deadline = time.monotonic() + timeout_s
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        self._thread.join(max(0.0, deadline - time.monotonic()))
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
            left = list(self._queue)
            self._queue.clear()
            drafts = {t: d for t, d in self._drafts.items() if d.pieces}
            self._drafts.clear()
        by_session: dict[str, list[PendingWrite]] = {}
        for write in left:
            by_session.setdefault(write.session.session_id, []).append(write)
        for writes in by_session.values():
            extra = [d for d in drafts.values() if d.session is writes[0].session]
            reason = "the database was still unavailable when the desk quit"
            self._give_up(writes[0].session, writes, reason, drafts=extra)
        return dict(self._exports)

    # -- the writer thread ---------------------------------------------------------------------

    def _head(self) -> PendingWrite | None:
        return self._queue[0] if self._queue else None

    def _forget_draft(self, turn_id: str) -> None:
        draft = self._drafts.pop(turn_id, None)
        if draft is not None and draft.dirty:
            self._dirty -= 1

    def _loop(self) -> None:
        """The thread: :meth:`_run`, again after anything it did not expect (said in one line)."""
        while True:
            try:
                self._run()
                return
            except Exception as exc:  # a bug must not end every later write
                _log.error("desk: the store writer went on after %s", _one_line(exc))
                with self._cond:
                    if self._stopped:
                        return
                    self._cond.wait(self._retry_first)

    def _run(self) -> None:
        pause = self._retry_first
        while True:
            with self._cond:
                while not self._stopped:
                    if self._queue:
                        break
                    if self._dirty:  # at once when closing: the last text is written too
                        due = self._last_drafts + (0 if self._closing else self._interval)
                        wait = due - time.monotonic()
                        if wait <= 0:
                            break
                    elif self._closing:
                        return
                    else:
                        wait = None
                    self._cond.wait(wait)
                if self._stopped:
                    return
                head = self._head()
            if head is None:
                self._write_drafts()
                continue
            if self._attempt(head):
                pause = self._retry_first
                continue
            with self._cond:  # the database cannot take it now: pause, then the same again
                if not self._stopped:
                    self._cond.wait(pause)
            pause = min(self._retry_max, pause * 2)

    def _attempt(self, write: PendingWrite) -> bool:
        """Try the head write; False when it must be tried again (the database is unavailable).

        The thread waiting for it is told once it is committed (it survives a killed process
        then), and the disk syncs after that (:meth:`SessionStore.sync_after`): a turn's end is
        shown while the fsync runs, not after it."""
        try:
            with self._store.sync_after():
                return self._attempt_now(write)
        except OSError as exc:  # the commit stands; whether it survives a power cut is unknown
            _log.error("desk: the disk could not sync the session database: %s", _one_line(exc))
            return True

    def _attempt_now(self, write: PendingWrite) -> bool:
        try:
            result = write.apply(self._store)
        except StoreTransient as exc:
            with self._cond:
                waiting = [w.session for w in self._queue]
            self._announce(waiting, f"{WAITING}: {exc.message}")
            return False
        except StoreError as exc:
            self._give_up_session(write.session, exc.message)
            return True
        except Exception as exc:  # a bug in a write must not stop every later one
            self._give_up_session(write.session, f"internal error: {type(exc).__name__}: {exc}")
            return True
        with self._cond:
            if self._head() is write:
                self._queue.popleft()
            write.result, write.written = result, True
            write.done.set()
            session = write.session
            settled = session.session_id in self._waiting and not any(
                w.session is session for w in self._queue
            )
            if settled:
                self._waiting.pop(session.session_id, None)
        if settled:
            self._publish(session, StoreWaiting(waiting=False, message="saved"))
        return True

    def _write_drafts(self) -> None:
        with self._cond:
            self._last_drafts = time.monotonic()
            due: list[tuple[str, _Draft, str]] = []
            for turn_id, draft in self._drafts.items():
                session = draft.session
                if not draft.dirty or any(w.session is session for w in self._queue):
                    continue  # its turn row may not be written yet: after the writes ahead
                draft.dirty = False
                self._dirty -= 1
                if not session.store_detached:
                    text = valid_text("".join(draft.pieces))  # made valid upstream; never fails
                    draft.pieces[:] = [text]
                    due.append((turn_id, draft, text))
        for turn_id, draft, text in due:
            try:
                self._store.turns.save_draft(turn_id, text)  # False: closed already, fine
            except StoreTransient:  # busy past the busy timeout: again at the next interval
                with self._cond:
                    if self._drafts.get(turn_id) is draft and not draft.dirty:
                        draft.dirty = True
                        self._dirty += 1
            except StoreError:
                pass  # the turn's close reports a store that fails for good
            except Exception as exc:  # a bug in one draft: the next one, and the close, go on
                _log.error("desk: a draft of turn %s was not saved: %s", turn_id, _one_line(exc))

    # -- giving up -----------------------------------------------------------------------------

    def _announce(self, sessions: list[Session], message: str) -> None:
        told: list[Session] = []
        with self._cond:
            for session in sessions:
                if session.session_id not in self._waiting and not session.store_detached:
                    self._waiting[session.session_id] = session
                    told.append(session)
        for session in told:
            self._publish(session, StoreWaiting(waiting=True, message=message))

    def _give_up_session(self, session: Session, reason: str) -> None:
        with self._cond:
            mine = [w for w in self._queue if w.session is session]
            self._queue = deque(w for w in self._queue if w.session is not session)
            drafts = [d for d in self._drafts.values() if d.session is session]
        self._give_up(session, mine, reason, drafts=drafts)

    def _give_up(
        self,
        session: Session,
        writes: list[PendingWrite],
        reason: str,
        *,
        drafts: list[_Draft] | None = None,
    ) -> None:
        """Export ``writes`` (and the text of open drafts), keep the session in memory only,
        and tell the person once, with the file's path."""
        with self._cond:
            seen = self._seen.setdefault(session.session_id, set())
        records = _once([w.unsaved for w in writes], seen)
        for draft in drafts or []:
            text = "".join(draft.pieces)
            if text:
                reply = UnsavedMessage(role="assistant", content=text, partial=True)
                records.append(
                    Unsaved(
                        action="the reply streamed so far",
                        session_id=session.session_id,
                        messages=(reply,),
                    )
                )
        path: Path | None = None
        where = ""
        if records:
            try:
                path = export(records, session.session_id, self._unsaved_dir)
                where = f"; what was not saved is in {path}"
            except OSError as exc:
                where = f"; what was not saved could not be written anywhere ({exc.strerror})"
            except Exception as exc:  # a bug in the export: say so, never end the writer
                _log.error("desk: the unsaved export failed: %s", _one_line(exc))
                where = f"; what was not saved could not be written ({type(exc).__name__})"
        for write in writes:
            write.done.set()
        with self._cond:
            first = not session.store_detached
            session.store_detached = True
            self._waiting.pop(session.session_id, None)
            if path is not None:
                self._exports[session.session_id] = path
        if first:
            action = writes[0].action if writes else "save the session"
            message = f"{reason}; this session is kept in memory only from now on{where}"
            self._publish(
                session,
                StoreFailed(action=action, message=message, unsaved=str(path or "")),
            )


def _one_line(exc: BaseException) -> str:
    """``Name: message`` of ``exc`` on one line."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


_Seen = set[tuple[str | None, str, str]]


def _once(records: list[Unsaved], seen: _Seen) -> list[Unsaved]:
    """``records`` without a message of a turn exported already (``seen``, updated): a queued
    prompt's text comes again when its turn starts. A record left with no message of its own
    is dropped."""
    out: list[Unsaved] = []
    for record in records:
        fresh = tuple(m for m in record.messages if (record.turn_id, m.role, m.content) not in seen)
        seen.update((record.turn_id, m.role, m.content) for m in fresh)
        if record.messages and not fresh:
            continue
        out.append(replace(record, messages=fresh))
    return out
