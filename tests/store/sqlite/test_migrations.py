"""Schema versions: v1 and v2 files open at the current version with their data; a failed step
changes nothing; a newer file is refused."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

import agent.store.sqlite.store as sqlite_module
from agent.provider.types import ChatMessage
from agent.store import SCHEMA_VERSION, SqliteStore, StoreError, StoreTooNew
from agent.store.sqlite.schema import MIGRATIONS
from tests.store.conftest import FakeClock


def _user_version(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])
    finally:
        conn.close()


def _make_v1(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("BEGIN")
        for statement in MIGRATIONS[0]:
            conn.execute(statement)
        conn.execute("PRAGMA user_version = 1")
        conn.execute(
            "INSERT INTO sessions (id, title, model, cwd, created_at, updated_at)"
            " VALUES ('old', 'from v1', 'm', '/', 1.0, 2.0)"
        )
        conn.execute(
            "INSERT INTO turns (id, session_id, prompt, owner, started_at, ended_at, status,"
            " exit_reason) VALUES ('t1', 'old', 'hi', '', 1.0, 2.0, 'completed', 'completed')"
        )
        rows: list[tuple[Any, ...]] = [
            ("old", 0, "system", "sys", None),
            ("old", 1, "user", "hi", "t1"),
            ("old", 2, "assistant", "hello", "t1"),
        ]
        conn.executemany(
            "INSERT INTO messages (session_id, position, role, content, turn_id, created_at)"
            " VALUES (?, ?, ?, ?, ?, 1.5)",
            rows,
        )
        conn.execute("COMMIT")
    finally:
        conn.close()


def test_current_version_is_written(db_path: Path) -> None:
    with SqliteStore(db_path) as s:
        assert s.schema_version() == SCHEMA_VERSION == len(MIGRATIONS)
    assert _user_version(db_path) == SCHEMA_VERSION


def test_a_v1_file_opens_at_the_current_version(db_path: Path) -> None:
    _make_v1(db_path)
    assert _user_version(db_path) == 1
    with SqliteStore(db_path) as s:
        assert s.schema_version() == SCHEMA_VERSION
        assert s.integrity_check() == "ok"
        assert [m.content for m in s.transcript.load_history("old")] == ["sys", "hi", "hello"]
        assert [m.order_key for m in s.transcript.active_messages("old")] == [0, 1, 2]
        row = s.sessions.get_session("old")
        assert row is not None and row.title == "from v1" and row.compression_cooldown_step == 0
        # v2 features work on the migrated data.
        assert s.leases.acquire_lease("old", "h", ttl_s=30)
        attempt = s.compressions.begin_compression("old", "h")
        ids = [m.id for m in s.transcript.active_messages("old")[1:2]]
        assert s.compressions.commit_compression(
            attempt.id, holder="h", archive_ids=ids, summary=ChatMessage("user", "sum")
        )
        assert [m.content for m in s.transcript.load_history("old")] == ["sys", "sum", "hello"]
        s.transcript.append_message("old", ChatMessage("user", "next"))
        assert [m.position for m in s.transcript.all_messages("old")] == [0, 1, 2, 3, 4]
    conn = sqlite3.connect(db_path)
    try:
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    finally:
        conn.close()


def test_a_failed_step_rolls_back_whole(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    SqliteStore(db_path).close()
    broken = (*MIGRATIONS, ("CREATE TABLE half (x INTEGER)", "THIS IS NOT SQL"))
    monkeypatch.setattr(sqlite_module, "MIGRATIONS", broken)
    monkeypatch.setattr(sqlite_module, "SCHEMA_VERSION", len(broken))
    with pytest.raises(StoreError):
        SqliteStore(db_path)
    assert _user_version(db_path) == SCHEMA_VERSION
    conn = sqlite3.connect(db_path)
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    finally:
        conn.close()
    assert "half" not in tables
    monkeypatch.undo()
    with SqliteStore(db_path) as s:  # and the file still opens
        assert s.schema_version() == SCHEMA_VERSION


def test_a_newer_file_is_refused(db_path: Path) -> None:
    SqliteStore(db_path).close()
    conn = sqlite3.connect(db_path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 7}")
    conn.close()
    with pytest.raises(StoreTooNew, match="newer desk") as info:
        SqliteStore(db_path)
    assert str(db_path) in str(info.value)


def test_a_v2_file_migrates_and_keeps_its_data(db_path: Path, clock: FakeClock) -> None:
    db_path.parent.mkdir(parents=True)
    conn = sqlite3.connect(db_path, isolation_level=None)
    try:
        conn.execute("BEGIN")
        for statement in (*MIGRATIONS[0], *MIGRATIONS[1]):
            conn.execute(statement)
        conn.execute("PRAGMA user_version = 2")
        conn.execute(
            "INSERT INTO sessions (id, title, model, cwd, created_at, updated_at,"
            " compression_cooldown_step) VALUES ('old', 'from v2', 'm', '/', 1.0, 2.0, 2)"
        )
        conn.execute(
            "INSERT INTO turns (id, session_id, prompt, owner, started_at, ended_at, status,"
            " exit_reason) VALUES ('t1', 'old', 'hi', '', 1.0, 2.0, 'completed', 'completed')"
        )
        rows: list[tuple[Any, ...]] = [
            ("old", 0, 0, "user", "hi", "t1"),
            ("old", 1, 1, "assistant", "hello", "t1"),
        ]
        conn.executemany(
            "INSERT INTO messages (session_id, position, order_key, role, content, turn_id,"
            " created_at) VALUES (?, ?, ?, ?, ?, ?, 1.5)",
            rows,
        )
        conn.execute("COMMIT")
    finally:
        conn.close()
    with SqliteStore(db_path, clock=clock) as s:
        assert s.schema_version() == SCHEMA_VERSION == 12
        assert s.integrity_check() == "ok"
        assert [(x.role, x.content, x.turn_id) for x in s.transcript.all_messages("old")] == [
            ("user", "hi", "t1"),
            ("assistant", "hello", "t1"),
        ]
        row = s.sessions.get_session("old")
        assert row is not None and row.title == "from v2" and row.compression_cooldown_step == 2
        turn = s.turns.get_turn("t1")
        assert turn is not None and turn.exit_reason == "completed" and not turn.not_sent
        assert turn.usage is None  # saved before desk counted usage
        assert s.queue.queued_prompts() == []
        assert s.queue.queue_prompt("t2", "old", "next")  # the new table works on migrated data
        assert s.checkpoints.record_before("old", "t1", "/w/a", b"x")  # and the checkpoints
        assert [q.turn_id for q in s.queue.queued_prompts("old")] == ["t2"]
        assert turn.parent_turn_id is None and turn.reply is None  # version 4's columns
        s.turns.start_turn("c1", "old", "a task", parent_turn_id="t1")
        assert [m.turn_id for m in s.transcript.all_messages("old")] == ["t1", "t1"]
        s.claim_session("old")  # version 5's columns: a migrated session is claimed like a new one
        assert s.firings.claim_firing("nightly", 3600.0)  # version 8: schedule firings
        assert turn.model is None  # saved before desk kept each turn's model (version 9)
        assert turn.finish_reason is None and turn.dismissed is None  # version 10's columns
        assert s.turns.start_turn("t3", "old", "on", model="m2").model == "m2"
        migrated = s.sessions.get_session("old")
        assert migrated is not None and migrated.model == "m2"
        kept = s.transcript.append_event("old", "compression.complete", "{}")  # version 11
        assert kept.after_position == 2 and s.transcript.events("old") == [kept]  # after "on"
    with SqliteStore(db_path, clock=clock) as s:
        assert s.claim_session("old") >= 1  # given back when the first store closed
