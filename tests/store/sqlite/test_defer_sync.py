"""A quit's last writes (``defer_sync``): not fsynced one by one, all in the database file once
the store closed, whether or not another connection keeps the file open."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from agent.provider.types import ChatMessage
from agent.store import NewMessage, SqliteStore, TurnOutcome

STOPPED = TurnOutcome(
    status="interrupted",
    exit_reason="interrupted_by_system",
    stop_issuer="system",
    stop_surface="gateway.shutdown",
    stop_reason="the desk is quitting",
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


def test_the_quits_writes_are_folded_into_the_database_file_at_close(tmp_path: Path) -> None:
    path = tmp_path / "desk.db"
    _quit_with_a_stopped_turn(SqliteStore(path))
    # the close checkpointed the log (synced, copied into the file, removed): nothing the
    # quit wrote waits in a log that was never synced
    assert not Path(f"{path}-wal").exists()
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
