"""The prompt history's file: sent prompts kept across restarts, one JSON string a line.

Beside the session database (``desk.db-prompts`` for ``desk.db``; for a PostgreSQL store, in
desk's data folder): one history a database, denied to the file tools as the database is, and
readable by its owner only (prompts may hold secrets). Each sent prompt is
appended as it is sent, under an advisory lock so that two desks writing at once do not
interleave; reading takes the last `READ_BYTES` of the file only, and a file grown past twice
the entries kept is rewritten with its newest ones. A prompt longer than `MAX_SAVED_CHARS` is
kept for the run only. A file that cannot be read or written is not an error the person must
act on: the history is then this run's alone (:attr:`HistoryFile.problem` says why, once).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from pathlib import Path

from agent.store.errors import StoreError
from agent.store.paths import POSTGRES_PROMPTS, default_db_path, prompts_path
from agent.valid_text import valid_text

MAX_SAVED_CHARS = 32_000
"""Longest prompt written to the file (a longer paste is recalled in its own run only)."""

READ_BYTES = 4 * 1024 * 1024
"""Most of the file's end read at start (older lines are not read)."""


def history_path(db: str) -> Path:
    """Where the prompt history of a desk whose sessions go to ``db`` is kept
    (:func:`agent.store.paths.prompts_path`; desk's data folder for a URL it cannot open).

    Args:
        db: the session database (a file path, ``sqlite:///PATH``, a PostgreSQL URL).
    """
    try:
        return prompts_path(db)
    except StoreError:
        return default_db_path().with_name(POSTGRES_PROMPTS)


class HistoryFile:
    """One prompt-history file.

    Args:
        path: the file (created with its folder on the first append).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.problem = ""
        """Why the file could not be read or written ("" when it could)."""

    def read(self, limit: int) -> list[str]:
        """The newest ``limit`` prompts, oldest first ([] when there is no file or it cannot
        be read; a line that is not a JSON string is skipped). Rewrites the file with them
        when it holds more than twice as many."""
        entries: list[str] = []
        for _attempt in range(3):  # another desk's rewrite may replace the file meanwhile
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CLOEXEC)
            except FileNotFoundError:
                return []
            except OSError as exc:
                self.problem = f"cannot read {self.path}: {exc.strerror or exc}"
                return []
            try:
                entries, whole = _tail(fd)
                if len(entries) <= 2 * limit and whole:
                    return entries[-limit:]
                fcntl.flock(fd, fcntl.LOCK_EX)  # no append between this read and the rewrite
                if os.fstat(fd).st_ino != os.stat(self.path).st_ino:
                    continue  # replaced while we waited: ours is the old file, read the new
                entries, _whole = _tail(fd)
                self._rewrite(entries[-limit:])
                return entries[-limit:]
            except OSError as exc:
                self.problem = f"cannot read {self.path}: {exc.strerror or exc}"
                return []
            finally:
                os.close(fd)
        return entries[-limit:]

    def append(self, text: str) -> None:
        """Add one sent prompt at the end (not when longer than `MAX_SAVED_CHARS`)."""
        if len(text) > MAX_SAVED_CHARS:
            return
        line = (json.dumps(valid_text(text), ensure_ascii=False) + "\n").encode()
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            for _attempt in range(3):  # a rewrite may replace the file while we wait
                fd = os.open(self.path, flags, 0o600)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX)
                    if os.fstat(fd).st_ino == os.stat(self.path).st_ino:
                        os.write(fd, line)
                        return
                finally:
                    os.close(fd)
        except OSError as exc:
            self.problem = f"cannot write {self.path}: {exc.strerror or exc}"

    def _rewrite(self, entries: list[str]) -> None:
        """Replace the file by ``entries`` (the caller holds its lock)."""
        data = "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in entries).encode()
        temp = self.path.with_name(f".{self.path.name}.{os.getpid()}")
        try:
            with open(temp, "wb", opener=lambda p, f: os.open(p, f, 0o600)) as out:
                out.write(data)
            os.replace(temp, self.path)
        except OSError as exc:
            self.problem = f"cannot rewrite {self.path}: {exc.strerror or exc}"
            with contextlib.suppress(OSError):
                temp.unlink()


def _tail(fd: int) -> tuple[list[str], bool]:
    """The prompts in the last `READ_BYTES` of the open file, oldest first, and whether that
    was the whole file."""
    size = os.fstat(fd).st_size
    start = max(0, size - READ_BYTES)
    data = os.pread(fd, size - start, start)
    lines = data.split(b"\n")
    if start > 0:
        lines = lines[1:]  # the first may be the end of a line
    entries: list[str] = []
    for line in lines:
        with contextlib.suppress(ValueError, UnicodeDecodeError):
            value = json.loads(line) if line.strip() else None
            if isinstance(value, str) and value.strip():
                entries.append(valid_text(value))
    return entries, start == 0
