"""The SQLite session store: the embedded default behind :class:`~agent.store.SessionStore`.

One database file holds sessions, their transcripts, turns and compression state. Every
mutation is one transaction (see :mod:`agent.store.sqlite.connections` for locking), so a stop,
a crash or a quit never leaves a half-written row: a transaction is either in the file whole or
not at all, and whatever a call reported as written survives a killed process.

:class:`SqliteStore` opens the file, migrates it and closes it; the table groups it is made of
(those of :mod:`agent.store.sql`, on :class:`~agent.store.sqlite.engine.SqliteEngine`) do
the reading and writing.
"""

from __future__ import annotations

import contextlib
import os
import time
from contextlib import AbstractContextManager
from pathlib import Path

from agent.stamps import stamp
from agent.store.errors import StoreCorrupt, StoreError, StoreReadOnly, StoreTooNew
from agent.store.liveness import LocalLiveness, OwnerLiveness
from agent.store.sql.core import Clock, Core
from agent.store.sql.tables import SqlTables
from agent.store.sqlite.claims import SqliteClaims
from agent.store.sqlite.connections import MEMORY, Connections, Synchronous, resolve
from agent.store.sqlite.engine import SqliteEngine
from agent.store.sqlite.schema import MIGRATIONS, SCHEMA_VERSION


class SqliteStore(SqlTables):
    """Sessions, transcripts, turns, queued prompts and compression state in one SQLite file.

    Thread-safe. Made of one object per table group, which share the connections:
    :attr:`sessions`, :attr:`transcript`, :attr:`turns`, :attr:`queue`, :attr:`leases` and
    :attr:`compressions` (see :class:`~agent.store.protocol.SessionStore`). Opening creates the
    parent directory and the file when missing, switches the file to WAL mode, applies pending
    schema migrations (each in one transaction) and, unless ``recover=False``, closes turns,
    queued prompts and compressions left behind by a process that is gone
    (:meth:`~agent.store.sql.turns.SqlTurns.recover_open_turns`,
    :meth:`~agent.store.sql.queued.SqlQueue.recover_queued_prompts`,
    :meth:`~agent.store.sql.compressions.SqlCompressions.recover_abandoned_compressions`).

    Args:
        path: the database file, or ``":memory:"`` (one private in-memory database, for tests).
        clock: wall-clock source in unix seconds, for row times and lease expiry.
        busy_timeout_s: how long a write waits for another writer, in seconds, before
            :class:`~agent.store.errors.StoreLocked`.
        synchronous: ``FULL`` (default: fsync at every commit, durable across power loss) or
            ``NORMAL`` (durable across a killed process only; faster).
        liveness: this process's owner identity (written on the turns and queued prompts it
            starts) and whether another owner still runs (crash recovery); default
            :func:`default_liveness`.
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
        if self.path != MEMORY:
            _prepare_file(Path(self.path))
        live = liveness if liveness is not None else default_liveness(self.path)
        self._owner = live.owner
        self._db = Connections(self.path, busy_timeout_s=busy_timeout_s, synchronous=synchronous)
        self._claims = SqliteClaims(self._db, self._owner, live)
        core = Core(SqliteEngine(self._db, self._claims), self.path, clock, self._owner, live)
        super().__init__(core)
        try:
            self._migrate()
            if recover:
                self.turns.recover_open_turns()
                self.queue.recover_queued_prompts()  # after: a queue waits for its open turn
                self.compressions.recover_abandoned_compressions()
        except BaseException:
            self._db.close()
            raise

    # -- lifecycle -----------------------------------------------------------------------------

    def sync_after(self) -> AbstractContextManager[None]:
        """Commits this thread makes inside the block are fsynced once, at its end (see
        :meth:`Connections.sync_after`)."""
        return self._db.sync_after()

    def defer_sync(self) -> None:
        """The store closes soon (desk quits): commits are synced together at :meth:`close`
        rather than one by one (see :meth:`Connections.defer_sync`)."""
        self._db.defer_sync()

    def close(self) -> None:
        """Give back this store's session claims and close the database (idempotent). Later
        calls raise ``StoreClosed``."""
        if self._db.closed:
            return
        with contextlib.suppress(StoreError):  # unwritable now: a claim of a gone owner is free
            self._claims.release_all()
        stamp("store.claims_released")
        self._db.close()

    def claim_session(self, session_id: str) -> int:
        """Take (or keep) the session for this store's owner now, in one transaction: a
        session is live in one desk at a time (:mod:`~agent.store.sqlite.claims`).

        Taking it over from an owner that is gone closes what that owner left open (its turns,
        its queued prompts) first, as opening the file after a crash would.

        Returns:
            the fencing number.

        Raises:
            StoreNotFound: no such session.
            StoreFenced: another desk holds it and still runs.
        """
        fence, previous = self._claims.claim(session_id)
        if previous is not None:
            self.turns.recover_open_turns()
            self.queue.recover_queued_prompts()
        return fence

    def release_session(self, session_id: str) -> None:
        """Give the session's claim back (it is live here no more); nothing when not held."""
        self._claims.release(session_id)

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


def default_liveness(path: str) -> LocalLiveness:
    """The liveness of a store at ``path``: :class:`~agent.store.liveness.LocalLiveness` with
    its life locks in ``<path>-owners`` (beside the file, where every process that opens it
    sees them); none for an in-memory database."""
    return LocalLiveness(None if path == MEMORY else Path(f"{path}-owners"))


def _prepare_file(path: Path) -> None:
    """Create the parent directory (its owner's alone) and a new database file readable by
    its owner alone (its prompts may hold secrets; SQLite gives its side files the same
    mode); refuse a directory or an unwritable file up front.

    Raises:
        StoreCorrupt: ``path`` is a directory.
        StoreReadOnly: the directory cannot be created or written, or the file cannot be
            written.
    """
    if path.is_dir():
        raise StoreCorrupt(f"{path} is a directory, not a desk session database", path)
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
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
