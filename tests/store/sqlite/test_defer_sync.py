"""A quit's last writes (``defer_sync``): not fsynced one by one, all durable once the store
closed (synced in the log, which the quit leaves for the next opener instead of folding it into
the file), whether or not another connection keeps the file open, and when the process ends at
once after the close."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
from contextlib import closing
from pathlib import Path

import pytest

from agent.provider.types import ChatMessage
from agent.store import NewMessage, SqliteStore, TurnOutcome
from agent.store.sqlite.connections import path_lock
from tests.support import locked, poll_until, release

STOPPED = TurnOutcome(
    status="interrupted",
    exit_reason="interrupted_by_system",
    stop_issuer="system",
    stop_surface="gateway.shutdown",
    stop_reason="desk is shutting down",
)


def _quit_with_a_stopped_turn(store: SqliteStore) -> None:
    """A session, a turn that streams, then the quit: defer_sync, the turn's end, close."""
    store.sessions.create_session("s1")
    store.claim_session("s1")
    store.turns.start_turn("t1", "s1", "tell me")
    store.defer_sync()
    reply = NewMessage(ChatMessage("assistant", "the partial rep"), partial=True)
    assert store.turns.record_turn_end("t1", [reply], STOPPED) is True
    store.close()


def _read(path: Path) -> tuple[tuple[object, ...], list[tuple[object, ...]], object]:
    """The turn's outcome, its messages and the session's claim, from a fresh connection."""
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
        turn = conn.execute("SELECT exit_reason, stop_surface FROM turns WHERE id = 't1'")
        messages = conn.execute(
            "SELECT role, content, partial FROM messages WHERE turn_id = 't1' ORDER BY position"
        )
        claim = conn.execute("SELECT claim_owner FROM sessions WHERE id = 's1'")
        return turn.fetchone(), messages.fetchall(), claim.fetchone()[0]


def test_the_quits_writes_are_read_back_from_the_log_it_leaves(tmp_path: Path) -> None:
    path = tmp_path / "desk.db"
    _quit_with_a_stopped_turn(SqliteStore(path))
    # no checkpoint at the quit: the log is left (synced) for the next opener
    assert Path(f"{path}-wal").stat().st_size > 0
    turn, messages, claim = _read(path)
    assert turn == ("interrupted_by_system", "gateway.shutdown")
    assert messages == [("user", "tell me", 0), ("assistant", "the partial rep", 1)]
    assert claim is None  # the claim was given back


def test_the_quits_writes_are_kept_when_another_connection_holds_the_file(
    tmp_path: Path,
) -> None:
    path = tmp_path / "desk.db"
    store = SqliteStore(path)
    with closing(sqlite3.connect(path)) as other:  # e.g. a second desk reading the sessions
        other.execute("SELECT count(*) FROM sessions").fetchone()
        _quit_with_a_stopped_turn(store)
        turn, messages, claim = _read(path)
    assert turn == ("interrupted_by_system", "gateway.shutdown")
    assert [m[1] for m in messages] == ["tell me", "the partial rep"]
    assert claim is None


def test_defer_sync_on_a_closed_or_memory_store_does_nothing(tmp_path: Path) -> None:
    memory = SqliteStore(":memory:")
    memory.defer_sync()
    memory.sessions.create_session("s1")
    assert memory.sessions.get_session("s1") is not None
    memory.close()
    closed = SqliteStore(tmp_path / "desk.db")
    closed.close()
    closed.defer_sync()  # a quit after the store closed (a second shutdown): no error
    with pytest.raises(Exception, match="closed"):
        closed.sessions.list_sessions()


QUIT_AND_EXIT = """
import os, sys
from agent.provider.types import ChatMessage
from agent.store import NewMessage, SqliteStore, TurnOutcome
from agent.store.sqlite.connections import path_lock
from tests.support import locked, poll_until, release
store = SqliteStore(sys.argv[1])
store.sessions.create_session("s1")
store.claim_session("s1")
store.turns.start_turn("t1", "s1", "tell me")
store.defer_sync()
reply = NewMessage(ChatMessage("assistant", "the partial rep"), partial=True)
stop = TurnOutcome(status="interrupted", exit_reason="interrupted_by_system",
                   stop_issuer="system", stop_surface="gateway.shutdown",
                   stop_reason="desk is shutting down")
store.turns.record_turn_end("t1", [reply], stop)
store.close()
os._exit(0)  # as desk ends after its quit: no interpreter teardown, nothing else closed
"""


def test_a_process_that_ends_right_after_the_quits_close_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "desk.db"
    subprocess.run([sys.executable, "-c", QUIT_AND_EXIT, str(path)], check=True, timeout=120)
    reopened = SqliteStore(path)  # the next desk: reads the log the quit left
    try:
        assert reopened.sessions.get_session("s1") is not None
        assert reopened.integrity_check() == "ok"
    finally:
        reopened.close()
    turn, messages, claim = _read(path)
    assert turn == ("interrupted_by_system", "gateway.shutdown")
    assert messages == [("user", "tell me", 0), ("assistant", "the partial rep", 1)]
    assert claim is None


def test_an_ordinary_close_folds_the_log_into_the_file(tmp_path: Path) -> None:
    path = tmp_path / "desk.db"
    store = SqliteStore(path)
    store.sessions.create_session("s1")
    store.close()
    assert not Path(f"{path}-wal").exists()  # checkpointed and removed by the last close
    with closing(sqlite3.connect(path)) as conn:
        assert conn.execute("SELECT count(*) FROM sessions").fetchone()[0] == 1


def test_defer_sync_never_waits_for_a_write_held_up_by_another_program(tmp_path: Path) -> None:
    """A quit that begins while a write waits for another program's lock is not held up by
    it; the writes that follow are still deferred, and durable once the store closed."""
    path = tmp_path / "desk.db"
    store = SqliteStore(path, busy_timeout_s=30.0)
    store.sessions.create_session("s1")
    store.claim_session("s1")
    with locked(path) as locker:
        write = threading.Thread(target=store.turns.start_turn, args=("t1", "s1", "tell me"))
        write.start()
        assert poll_until(lambda: path_lock(os.path.realpath(path)).locked())  # it waits
        deferring = threading.Thread(target=store.defer_sync)
        deferring.start()
        deferring.join(10)
        assert not deferring.is_alive()  # returned while the other program holds the lock
        assert locker.poll() is None
        release(locker)
        write.join(30)
    reply = NewMessage(ChatMessage("assistant", "the partial rep"), partial=True)
    assert store.turns.record_turn_end("t1", [reply], STOPPED) is True
    store.close()
    assert Path(f"{path}-wal").stat().st_size > 0  # deferred: the synced log is left
    turn, messages, claim = _read(path)
    assert turn == ("interrupted_by_system", "gateway.shutdown")
    assert messages == [("user", "tell me", 0), ("assistant", "the partial rep", 1)]
    assert claim is None
