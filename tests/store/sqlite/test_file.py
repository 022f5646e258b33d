"""The SQLite file: where it is, what opening it creates, and what its tables hold."""

from __future__ import annotations

import sqlite3
import stat
from pathlib import Path

import pytest

from agent.provider.types import ChatMessage
from agent.store import SqliteStore, default_db_path
from tests.store.conftest import FakeClock


def test_open_creates_the_folder_and_a_wal_file(db_path: Path) -> None:
    assert not db_path.parent.exists()
    with SqliteStore(db_path) as s:
        assert db_path.exists()
        assert s.integrity_check() == "ok"
    conn = sqlite3.connect(db_path)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        conn.close()


def test_a_new_database_and_its_side_files_are_their_owner_s_alone(db_path: Path) -> None:
    # Everything ever said is in it (a pasted token too): -rw-r--r-- let anyone read it
    with SqliteStore(db_path) as s:
        s.sessions.create_session("s1")
        side = [p for p in db_path.parent.glob(db_path.name + "-*") if p.is_file()]
        assert side  # the write-ahead log and its shared memory, while open
        for path in [db_path, *side]:
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert stat.S_IMODE(db_path.parent.stat().st_mode) == 0o700


def test_delete_leaves_no_row_in_any_table(db_path: Path) -> None:
    store = SqliteStore(db_path)
    store.sessions.create_session("s1")
    store.sessions.create_session("s2")
    store.turns.start_turn("t1", "s1", "hello")
    store.transcript.append_message("s1", ChatMessage("assistant", "hi"), turn_id="t1")
    assert store.leases.acquire_lease("s1", "h", 30)
    store.compressions.begin_compression("s1", "h")
    store.queue.queue_prompt("q1", "s1", "later")
    store.turns.start_turn("t2", "s2", "other")
    assert store.sessions.delete_session("s1") is True
    store.close()
    conn = sqlite3.connect(db_path)
    try:
        tables = (
            "messages",
            "turns",
            "queued_prompts",
            "compression_leases",
            "compression_attempts",
        )
        for table in tables:
            (n,) = conn.execute(f"SELECT count(*) FROM {table} WHERE session_id = 's1'").fetchone()
            assert n == 0, table
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    finally:
        conn.close()


def test_default_path_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_db_path() == tmp_path / "xdg" / "desk" / "desk.db"
    monkeypatch.setenv("XDG_DATA_HOME", "relative/dir")  # not absolute: ignored by the spec
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_db_path() == tmp_path / "home" / ".local" / "share" / "desk" / "desk.db"
    monkeypatch.delenv("XDG_DATA_HOME")
    assert default_db_path() == tmp_path / "home" / ".local" / "share" / "desk" / "desk.db"


def test_default_path_opens(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    with SqliteStore(default_db_path()) as s:
        s.sessions.create_session("s1")
    assert (tmp_path / "xdg" / "desk" / "desk.db").is_file()


def test_memory_store_works(clock: FakeClock) -> None:
    with SqliteStore(":memory:", clock=clock) as s:
        s.sessions.create_session("s1")
        s.transcript.append_message("s1", ChatMessage("user", "hi"))
        assert s.transcript.load_history("s1") == [ChatMessage("user", "hi")]
