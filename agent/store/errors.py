"""Typed store errors, each with a one-line human message naming the database file.

The gateway catches :class:`StoreError` (the base of every error here) and shows ``str(error)``
in the UI. A :class:`StoreTransient` (the database cannot take the write now, but may later: a
lock another process holds past the busy timeout, or, for a database server, a lost connection)
is never a reason to drop a write: the gateway keeps it and retries. Every other error is final
for that write. ``sqlite3`` exceptions never leave the store: :func:`translate` maps them by their
extended result code (``sqlite_errorcode``, Python 3.11+), falling back to the message text.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

# Primary SQLite result codes (https://www.sqlite.org/rescode.html); the low byte of an
# extended code is its primary code.
SQLITE_PERM = 3
SQLITE_BUSY = 5
SQLITE_LOCKED = 6
SQLITE_READONLY = 8
SQLITE_IOERR = 10
SQLITE_CORRUPT = 11
SQLITE_FULL = 13
SQLITE_CANTOPEN = 14
SQLITE_NOTADB = 26


class StoreError(Exception):
    """Any failure of the session store.

    Attributes:
        message: one line for a person, naming the database file.
        path: the database path (``":memory:"`` for an in-memory store).
    """

    def __init__(self, message: str, path: str | Path = "") -> None:
        super().__init__(message)
        self.message = message
        self.path = str(path)

    def __str__(self) -> str:
        return self.message


class StoreTransient(StoreError):
    """The database cannot be used now but may be later: retry the same call, never drop it.

    Every backend raises a subclass of this (and only this) for a condition that passes by
    itself: SQLite for a lock held past the busy timeout (:class:`StoreLocked`), a database
    server for a connection lost or refused. Nothing was written by the call that raised it.
    """


class StoreLocked(StoreTransient):
    """Another writer held the database for longer than the busy timeout."""


class StoreReadOnly(StoreError):
    """The database file (or its directory) cannot be written."""


class StoreCorrupt(StoreError):
    """The file is not a SQLite database, or its pages are damaged."""


class StoreFull(StoreError):
    """The disk (or the file-size limit) is full."""


class StoreTooNew(StoreError):
    """The file was written by a newer desk whose schema this one does not know."""


class StoreUnreachable(StoreLocked):
    """The database server could not be reached (a restart, a lost network) for longer than
    the store waits.

    A :class:`StoreLocked`: like a lock it is transient, and the same write may succeed later,
    so whatever waits out a locked database waits this out too.
    """


class StoreFenced(StoreError):
    """A write to a session another host owns now (several gateways on one database).

    The session was live on another host, or was taken over from this one while this one was
    away (its fencing number is older than the session's): the write is refused whole.

    Attributes:
        owner: the owner string of the host that holds the session.
    """

    def __init__(self, message: str, path: str | Path = "", owner: str = "") -> None:
        super().__init__(message, path)
        self.owner = owner


class StoreNotFound(StoreError, LookupError):
    """A mutation names a session or turn that does not exist (deleted, or never created)."""


class StoreClosed(StoreError):
    """The store was closed; no more reads or writes."""


def translate(exc: sqlite3.Error, path: str | Path, *, waited_s: float | None = None) -> StoreError:
    """Map a ``sqlite3`` exception to the matching :class:`StoreError`, with a one-line message.

    Args:
        exc: the exception raised by ``sqlite3``.
        path: the database path, named in the message.
        waited_s: the busy timeout in seconds, named in a "locked" message.

    Returns:
        the typed error (never raises).
    """
    code = getattr(exc, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    lowered = text.lower()
    where = str(path)
    if primary in (SQLITE_BUSY, SQLITE_LOCKED) or "database is locked" in lowered:
        waited = f" (waited {waited_s:g} s)" if waited_s is not None else ""
        return StoreLocked(
            f"the session database {where} is busy: another desk or program holds it{waited}",
            path,
        )
    if primary == SQLITE_READONLY or "readonly" in lowered or "read-only" in lowered:
        return StoreReadOnly(f"the session database {where} is read-only ({text})", path)
    if primary == SQLITE_NOTADB or "not a database" in lowered:
        return StoreCorrupt(f"{where} is not a desk session database ({text})", path)
    if primary == SQLITE_CORRUPT or "malformed" in lowered:
        return StoreCorrupt(f"the session database {where} is damaged ({text})", path)
    if primary == SQLITE_FULL or "disk is full" in lowered:
        return StoreFull(f"no space left to write the session database {where}", path)
    if primary in (SQLITE_CANTOPEN, SQLITE_PERM):
        return StoreReadOnly(f"cannot open the session database {where} ({text})", path)
    if primary == SQLITE_IOERR:
        return StoreError(f"disk error on the session database {where} ({text})", path)
    return StoreError(f"session database {where}: {text}", path)
