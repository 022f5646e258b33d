"""SQLite connections of one store: a single writer, a pool of readers, one writer at a time.

Writes in this process go through one lock per database file (shared by every store object
that opens the same file), then ``BEGIN IMMEDIATE``, which takes SQLite's write lock up front
and waits for other processes for at most the busy timeout. So two writers never meet inside
SQLite in this process, and across processes a writer waits instead of failing half-way with
"database is locked". Readers use their own connections: in WAL mode a reader sees the last
committed snapshot and never waits for a writer.

An in-memory database (``":memory:"``) exists only on its one connection, so there reads and
writes share the writer connection under the same lock.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

from agent.home_path import expand_home
from agent.store.errors import StoreClosed, StoreError, StoreLocked, translate

MEMORY = ":memory:"

Synchronous = Literal["NORMAL", "FULL"]

_REGISTRY_LOCK = threading.Lock()
_PATH_LOCKS: dict[str, threading.Lock] = {}


def _reset_after_fork() -> None:
    # A lock held by another thread at fork() time would never be released in the child.
    global _REGISTRY_LOCK
    _REGISTRY_LOCK = threading.Lock()
    _PATH_LOCKS.clear()


os.register_at_fork(after_in_child=_reset_after_fork)


def path_lock(key: str) -> threading.Lock:
    """The process-wide write lock of the database file ``key`` (a resolved path)."""
    with _REGISTRY_LOCK:
        lock = _PATH_LOCKS.get(key)
        if lock is None:
            lock = _PATH_LOCKS[key] = threading.Lock()
        return lock


class Connections:
    """The connections of one store.

    Args:
        path: the database file, or ``":memory:"``.
        busy_timeout_s: how long a write waits for another writer, and a read for a lock, in
            seconds, before :class:`StoreLocked`.
        synchronous: ``FULL`` (fsync at every commit) or ``NORMAL`` (see
            :class:`~agent.store.sqlite.SqliteStore`).
        max_idle_readers: reader connections kept open between reads.

    Raises:
        StoreError: the file cannot be opened (see :func:`translate`).
    """

    def __init__(
        self,
        path: str,
        *,
        busy_timeout_s: float,
        synchronous: Synchronous,
        max_idle_readers: int = 4,
    ) -> None:
        self.path = path
        self.memory = path == MEMORY
        self.busy_timeout_s = busy_timeout_s
        self._synchronous = synchronous
        self._max_idle = max_idle_readers
        self._lock = threading.Lock() if self.memory else path_lock(os.path.realpath(path))
        self._pool_lock = threading.Lock()
        self._idle: list[sqlite3.Connection] = []
        self._closed = False
        self._deferred = False  # defer_sync() ran: close() syncs what the commits did not
        self._defer_wanted = False  # defer_sync() met a running write: the next write defers
        self._left_open: sqlite3.Connection | None = None  # the writer a deferred close kept
        self._here = threading.local()  # .unsynced: this thread is inside sync_after()
        self._writer = self._connect(writer=True)

    # -- opening -------------------------------------------------------------------------------

    def _connect(self, *, writer: bool) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(
                self.path,
                timeout=self.busy_timeout_s,
                isolation_level=None,  # autocommit; transactions are explicit BEGIN/COMMIT
                check_same_thread=False,  # used by one thread at a time, under our locks
            )
        except sqlite3.Error as exc:
            raise translate(exc, self.path) from exc
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_s * 1000)}")
            conn.execute("PRAGMA foreign_keys = ON")
            if writer and not self.memory:
                mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()
                if mode is None or str(mode[0]).lower() != "wal":
                    raise StoreError(
                        f"the session database {self.path} cannot use write-ahead logging "
                        f"(journal mode {mode[0] if mode else '?'})",
                        self.path,
                    )
            # FULL: fsync the WAL at every commit. In WAL mode NORMAL already survives a killed
            # process (a commit is in the OS page cache once COMMIT returns), but a power cut
            # or kernel panic can roll back the last commits. Desk commits a handful of small
            # transactions per turn, so the fsync (~1-10 ms) is invisible next to the model and
            # buys "nothing a person saw is lost" across power loss as well. The gateway's
            # writer makes its commits in sync_after blocks: the waiter goes on once COMMIT
            # returned (a turn's end is shown then) and the log is fsynced right after.
            conn.execute(f"PRAGMA synchronous = {self._synchronous}")
            if not writer:
                conn.execute("PRAGMA query_only = ON")
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # reads the header
        except sqlite3.Error as exc:
            conn.close()
            raise translate(exc, self.path, waited_s=self.busy_timeout_s) from exc
        except BaseException:
            conn.close()
            raise
        return conn

    # -- use -----------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosed(f"the session database {self.path} is closed", self.path)

    def _acquire(self, wait: bool = True) -> None:
        if not self._lock.acquire(timeout=self.busy_timeout_s if wait else 0):
            raise StoreLocked(
                f"the session database {self.path} is busy: another write in this desk held it "
                f"for over {self.busy_timeout_s:g} s",
                self.path,
            )

    @contextmanager
    def write(self, *, wait: bool = True, durable: bool = True) -> Iterator[sqlite3.Connection]:
        """One write transaction: ``BEGIN IMMEDIATE`` ... ``COMMIT``, rolled back on any error.

        Args:
            wait: False to fail at once with :class:`StoreLocked` instead of waiting (up to the
                busy timeout) when another writer holds the database.
            durable: False to commit this one transaction with ``synchronous = NORMAL`` (no
                fsync): in WAL mode it still survives a killed process, and the next durable
                commit (or checkpoint) fsyncs it with the rest; only a power cut before then
                can lose it. For frequent checkpoints that a later durable write replaces.

        Yields:
            the writer connection, inside the transaction.

        Raises:
            StoreLocked: another writer held the database past the busy timeout (or at all,
                with ``wait=False``).
            StoreError: any other SQLite failure (translated); the transaction is rolled back.
        """
        self._check_open()
        self._acquire(wait)
        relaxed = False
        try:
            self._check_open()
            if self._defer_wanted:
                self._defer_locked()
            unsynced = not durable or getattr(self._here, "unsynced", False)
            relaxed = unsynced and self._synchronous != "NORMAL" and not self.memory
            conn = self._writer
            try:
                if relaxed:
                    conn.execute("PRAGMA synchronous = NORMAL")
                if not wait:
                    conn.execute("PRAGMA busy_timeout = 0")
                try:
                    conn.execute("BEGIN IMMEDIATE")
                finally:
                    if not wait:
                        conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_s * 1000)}")
            except sqlite3.Error as exc:
                _rollback(conn)
                raise translate(exc, self.path, waited_s=self.busy_timeout_s) from exc
            try:
                yield conn
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                _rollback(conn)
                raise translate(exc, self.path, waited_s=self.busy_timeout_s) from exc
            except BaseException:
                _rollback(conn)
                raise
        finally:
            if relaxed:
                with contextlib.suppress(sqlite3.Error):  # outside the transaction: cannot fail
                    self._writer.execute(f"PRAGMA synchronous = {self._synchronous}")
            self._lock.release()

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """A connection for reading (autocommit; wrap several statements in ``BEGIN`` for one
        snapshot).

        Raises:
            StoreError: a translated SQLite failure.
        """
        self._check_open()
        if self.memory:
            self._acquire()
            try:
                try:
                    yield self._writer
                except sqlite3.Error as exc:
                    _rollback(self._writer)
                    raise translate(exc, self.path, waited_s=self.busy_timeout_s) from exc
            finally:
                self._lock.release()
            return
        with self._pool_lock:
            conn = self._idle.pop() if self._idle else None
        if conn is None:
            conn = self._connect(writer=False)
        try:
            yield conn
        except sqlite3.Error as exc:
            raise translate(exc, self.path, waited_s=self.busy_timeout_s) from exc
        finally:
            _rollback(conn)
            with self._pool_lock:
                keep = not self._closed and len(self._idle) < self._max_idle
                if keep:
                    self._idle.append(conn)
            if not keep:
                conn.close()

    @contextmanager
    def sync_after(self) -> Iterator[None]:
        """A block whose commits (made by this thread) are made durable once, when it ends,
        instead of one fsync each before ``COMMIT`` returns.

        Inside the block a commit is in the OS page cache when it returns (WAL mode: it
        survives a killed process, and other connections read it); the block's end fsyncs
        the log, under the write lock, so every commit made so far survives a power cut too.
        The store writer tells the thread waiting for a write that it is written inside the
        block: that thread goes on (shows the turn's end) while the disk syncs.

        Raises:
            OSError: the log could not be synced (the disk failed): the commits stand, their
                durability across a power cut is not known.
        """
        if self.memory or self._synchronous == "NORMAL" or getattr(self._here, "unsynced", False):
            yield  # nothing to defer (or an outer block syncs)
            return
        self._here.unsynced = True
        try:
            yield
        finally:
            self._here.unsynced = False
            with self._lock:
                if not self._closed:
                    _sync_file(self.path + "-wal")

    def defer_sync(self) -> None:
        """The store is about to close (desk quits): from now on a commit is not fsynced on
        its own (``synchronous = NORMAL``), and :meth:`close` syncs them all at once.

        A commit then still survives a killed process (WAL mode: it is in the OS page cache
        once ``COMMIT`` returns), and the close makes it survive a power cut too: its
        checkpoint syncs the log before copying it into the database (SQLite does so unless
        ``synchronous`` is ``OFF``), and a log that another connection keeps is fsynced
        whole. A quit's last writes (the stopped turn's reply, the released claims) took an
        fsync each, on the path of a person waiting for the terminal back.

        Never waits: when a write runs (one that waits for another program's lock, up to
        the busy timeout), the next write that takes the lock defers instead, so a quit is
        not held up here before it stops anything.
        """
        if self.memory or self._synchronous == "NORMAL":
            return
        if not self._lock.acquire(blocking=False):
            self._defer_wanted = True  # read by the writer holding the lock, or the next one
            return
        try:
            self._defer_locked()
        finally:
            self._lock.release()

    def _defer_locked(self) -> None:
        """:meth:`defer_sync`'s work; the caller holds the write lock."""
        self._defer_wanted = False
        if self._closed or self._synchronous == "NORMAL":
            return
        self._synchronous = "NORMAL"
        with contextlib.suppress(sqlite3.Error):  # outside a transaction: cannot fail
            self._writer.execute("PRAGMA synchronous = NORMAL")
        self._deferred = True

    def close(self) -> None:
        """Close every connection; waits (bounded by the busy timeout) for a running write.

        After :meth:`defer_sync` (the process ends next) the log is fsynced instead of being
        checkpointed: the writes are durable once this returns, and the next opener reads
        them from the log as after any exit (a WAL log stays valid; SQLite folds it into the
        database file at its next checkpoint). The checkpoint that closing the last
        connection makes (copy the log into the file, fsync both, remove the log) took about
        a third of a quit's time with a turn streaming. The writer connection is then left
        open, not closed, since closing it would checkpoint; it goes with the process (or is
        closed, checkpointing, when collected)."""
        if self._closed:
            return
        got = self._lock.acquire(timeout=self.busy_timeout_s)
        try:
            self._closed = True
            with self._pool_lock:
                idle, self._idle = self._idle, []
            for conn in idle:
                conn.close()  # not the last connection (the writer is open): no checkpoint
            if self._deferred:
                _sync_file(self.path + "-wal")
                self._left_open = self._writer
            else:
                self._writer.close()  # the last connection: its checkpoint syncs log and file
        finally:
            if got:
                self._lock.release()

    @property
    def closed(self) -> bool:
        """True once :meth:`close` ran."""
        return self._closed


def _sync_file(path: str) -> None:
    """fsync ``path`` when it exists (a file another process may remove meanwhile)."""
    with contextlib.suppress(FileNotFoundError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _rollback(conn: sqlite3.Connection) -> None:
    if conn.in_transaction:
        # The transaction may be gone already (SQLite rolls back itself after some errors).
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")


def resolve(path: Path | str) -> str:
    """The path string SQLite opens: ``":memory:"`` unchanged, else absolute, ``~`` expanded."""
    if str(path) == MEMORY:
        return MEMORY
    return str(expand_home(path).absolute())
