"""Failures reach the caller as typed StoreErrors with one-line messages naming the file."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import threading
from pathlib import Path

import pytest

from agent.provider.types import ChatMessage
from agent.store import (
    SqliteStore,
    StoreCorrupt,
    StoreError,
    StoreFull,
    StoreLocked,
    StoreReadOnly,
)
from agent.store.errors import translate
from agent.store.sqlite.connections import path_lock

ROOT = Path(__file__).resolve().parents[3]


def _one_line(error: StoreError) -> str:
    text = str(error)
    assert "\n" not in text and text
    return text


def test_a_file_that_is_not_a_database(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("these are my notes, not a database\n" * 200)
    with pytest.raises(StoreCorrupt) as info:
        SqliteStore(path)
    text = _one_line(info.value)
    assert str(path) in text and "not a desk session database" in text
    assert path.read_text().startswith("these are my notes")  # left untouched


def test_a_damaged_database(db_path: Path) -> None:
    with SqliteStore(db_path) as s:
        s.sessions.create_session("s1")
        for i in range(50):
            s.transcript.append_message("s1", ChatMessage("user", f"message {i} " * 20))
    data = bytearray(db_path.read_bytes())
    assert data.startswith(b"SQLite format 3\x00")
    data[100:4096] = b"\xa5" * (4096 - 100)  # page 1 after the header: the schema table
    db_path.write_bytes(bytes(data))
    with pytest.raises(StoreCorrupt) as info:
        SqliteStore(db_path)
    text = _one_line(info.value)
    assert str(db_path) in text and "damaged" in text


def test_a_directory(tmp_path: Path) -> None:
    with pytest.raises(StoreCorrupt, match="is a directory"):
        SqliteStore(tmp_path)


_READONLY_PROBE = textwrap.dedent(
    """
    import sys
    from agent.store import SqliteStore, StoreReadOnly
    try:
        SqliteStore(sys.argv[1])
    except StoreReadOnly as exc:
        print("READONLY", exc)
    else:
        print("OPENED")
    """
)


def test_a_read_only_file() -> None:
    folder = Path(tempfile.mkdtemp(prefix="desk-ro-"))
    try:
        path = folder / "desk.db"
        with SqliteStore(path) as s:
            s.sessions.create_session("s1")
        path.chmod(0o444)
        if os.geteuid() != 0:
            with pytest.raises(StoreReadOnly) as info:
                SqliteStore(path)
            text = _one_line(info.value)
        else:
            # root ignores file modes; drop the capabilities that let it (CAP_DAC_*).
            setpriv = shutil.which("setpriv")
            if setpriv is None:
                pytest.skip("running as root without setpriv to drop CAP_DAC_OVERRIDE")
            proc = subprocess.run(
                [
                    setpriv,
                    "--bounding-set",
                    "-dac_override,-dac_read_search",
                    sys.executable,
                    "-c",
                    _READONLY_PROBE,
                    str(path),
                ],
                cwd=ROOT,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
                capture_output=True,
                text=True,
                timeout=30,
            )
            assert proc.returncode == 0, proc.stderr
            assert proc.stdout.startswith("READONLY "), proc.stdout + proc.stderr
            text = proc.stdout.removeprefix("READONLY ").strip()
        assert str(path) in text and "read-only" in text
    finally:
        path.chmod(0o644)
        shutil.rmtree(folder)


def test_sqlite_readonly_errors_translate(db_path: Path) -> None:
    SqliteStore(db_path).close()
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        with pytest.raises(sqlite3.OperationalError) as info:
            conn.execute("DELETE FROM sessions")
    finally:
        conn.close()
    error = translate(info.value, db_path)
    assert isinstance(error, StoreReadOnly)
    assert str(db_path) in _one_line(error)


@pytest.mark.parametrize(
    ("code", "kind"),
    [(5, StoreLocked), (6, StoreLocked), (8, StoreReadOnly), (11, StoreCorrupt), (13, StoreFull)],
)
def test_result_codes_translate(code: int, kind: type[StoreError]) -> None:
    exc = sqlite3.OperationalError("something\nwith a second line")
    exc.sqlite_errorcode = code | 0x300  # an extended code: the low byte is the primary
    error = translate(exc, "/x/desk.db", waited_s=5)
    assert type(error) is kind
    assert "/x/desk.db" in _one_line(error)


def test_a_write_locked_by_another_process_times_out_but_reads_go_on(db_path: Path) -> None:
    with SqliteStore(db_path) as s:
        s.sessions.create_session("s1")
        s.transcript.append_message("s1", ChatMessage("user", "committed"))
    other = sqlite3.connect(db_path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    other.execute(
        "INSERT INTO messages (session_id, position, order_key, role, content, created_at)"
        " VALUES ('s1', 1, 1, 'user', 'uncommitted', 0)"
    )
    try:
        with SqliteStore(db_path, busy_timeout_s=0.2, recover=False) as s:
            with pytest.raises(StoreLocked) as info:
                s.transcript.append_message("s1", ChatMessage("user", "blocked"))
            text = _one_line(info.value)
            assert str(db_path) in text and "busy" in text
            assert [m.content for m in s.transcript.load_history("s1")] == ["committed"]
        # A reader with a long busy timeout is not held up by the open write transaction.
        with SqliteStore(db_path, busy_timeout_s=60, recover=False) as s:
            done = threading.Event()
            seen: list[str] = []

            def read() -> None:
                seen.extend(m.content for m in s.transcript.load_history("s1"))
                done.set()

            reader = threading.Thread(target=read)
            reader.start()
            assert done.wait(timeout=5), "a read waited for a writer"
            reader.join()
            assert seen == ["committed"]
    finally:
        other.execute("ROLLBACK")
        other.close()
    with SqliteStore(db_path) as s:
        s.transcript.append_message("s1", ChatMessage("user", "now it goes"))
        assert [m.content for m in s.transcript.load_history("s1")] == ["committed", "now it goes"]


def test_a_write_held_in_this_process_times_out(db_path: Path) -> None:
    with SqliteStore(db_path, busy_timeout_s=0.1) as s:
        s.sessions.create_session("s1")
        lock = path_lock(os.path.realpath(db_path))
        assert lock.acquire(timeout=5)
        try:
            with pytest.raises(StoreLocked, match="another write in this desk"):
                s.transcript.append_message("s1", ChatMessage("user", "x"))
        finally:
            lock.release()
        s.transcript.append_message("s1", ChatMessage("user", "x"))


def test_a_draft_without_waiting_gives_up_at_once(db_path: Path) -> None:
    with SqliteStore(db_path, busy_timeout_s=60) as s:
        s.sessions.create_session("s1")
        s.turns.start_turn("t1", "s1", "hi")
        lock = path_lock(os.path.realpath(db_path))
        assert lock.acquire(timeout=5)
        try:
            assert s.turns.save_draft("t1", "Hel", wait=False) is False  # in-process writer busy
        finally:
            lock.release()
        other = sqlite3.connect(db_path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        try:
            assert s.turns.save_draft("t1", "Hell", wait=False) is False  # another process busy
        finally:
            other.execute("ROLLBACK")
            other.close()
        assert s.turns.save_draft("t1", "Hello", wait=False) is True
        assert s.turns.get_turn("t1").draft == "Hello"  # type: ignore[union-attr]
        s.transcript.append_message("s1", ChatMessage("user", "the normal timeout is back"))
