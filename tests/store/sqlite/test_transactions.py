"""A write that touches several table groups is one SQLite transaction: when it fails half-way
(here: the message insert, the step they share), nothing of it is left."""

from __future__ import annotations

import sqlite3
from types import ModuleType

import pytest

import agent.store.sql.compressions as sqlite_compressions
import agent.store.sql.queued as sqlite_queued
import agent.store.sql.sessions as sqlite_sessions
import agent.store.sql.turns as sqlite_turns
from agent.provider.types import ChatMessage
from agent.store import SqliteStore, StoreError, TurnOutcome
from agent.store.sql.messages import insert_messages


def _transcript(store: SqliteStore, sid: str) -> list[tuple[str, str, str | None]]:
    return [(m.role, m.content, m.turn_id) for m in store.transcript.all_messages(sid)]


def _fail_inserts(patch: pytest.MonkeyPatch, module: ModuleType, after: int = 0) -> None:
    """Make ``module``'s message inserts fail, after ``after`` that succeed."""
    calls = [0]

    def insert(*args: object, **kwargs: object) -> object:
        calls[0] += 1
        if calls[0] > after:
            raise sqlite3.OperationalError("disk I/O error")
        return insert_messages(*args, **kwargs)  # type: ignore[arg-type]

    patch.setattr(module, "insert_messages", insert)


def test_start_turn_and_the_queued_row_are_one_transaction(
    sqlite_store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = sqlite_store
    store.sessions.create_session("s1")
    store.queue.queue_prompt("q1", "s1", "first")
    with monkeypatch.context() as patch:  # the user message fails after the row was deleted
        _fail_inserts(patch, sqlite_turns)
        with pytest.raises(StoreError):
            store.turns.start_turn("q1", "s1", "first")
    assert store.turns.get_turn("q1") is None
    assert [q.turn_id for q in store.queue.queued_prompts("s1")] == ["q1"]  # rolled back whole
    store.turns.start_turn("q1", "s1", "first")
    assert store.queue.queued_prompts() == []
    assert _transcript(store, "s1") == [("user", "first", "q1")]


def test_a_session_and_its_first_messages_are_one_transaction(
    sqlite_store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as patch:
        _fail_inserts(patch, sqlite_sessions)
        with pytest.raises(StoreError):
            sqlite_store.sessions.create_session("s1", messages=[ChatMessage("system", "hi")])
    assert sqlite_store.sessions.get_session("s1") is None


def test_dropped_prompts_close_in_one_transaction(
    sqlite_store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = sqlite_store
    store.sessions.create_session("s1")
    for n in range(3):
        store.queue.queue_prompt(f"q{n}", "s1", f"prompt {n}")
    prompts = [(f"q{n}", f"prompt {n}") for n in range(3)]
    outcome = TurnOutcome(status="interrupted", exit_reason="interrupted_by_system(x)")
    with monkeypatch.context() as patch:  # the second prompt's message fails
        _fail_inserts(patch, sqlite_queued, after=1)
        with pytest.raises(StoreError):
            store.queue.close_unsent_prompts("s1", prompts, outcome)
    assert store.turns.list_turns("s1") == [] and _transcript(store, "s1") == []
    assert [q.turn_id for q in store.queue.queued_prompts("s1")] == ["q0", "q1", "q2"]
    assert store.queue.close_unsent_prompts("s1", prompts, outcome) == ["q0", "q1", "q2"]


def test_a_commit_archives_and_inserts_its_summary_in_one_transaction(
    sqlite_store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = sqlite_store
    store.sessions.create_session("s1", messages=[ChatMessage("user", f"m{n}") for n in range(4)])
    before = store.transcript.active_messages("s1")
    assert store.leases.acquire_lease("s1", "h", ttl_s=30)
    attempt = store.compressions.begin_compression("s1", "h")
    ids = [m.id for m in before[1:3]]
    summary = ChatMessage("user", "[summary]")
    with monkeypatch.context() as patch:  # the summary fails after the run was archived
        _fail_inserts(patch, sqlite_compressions)
        with pytest.raises(StoreError):
            store.compressions.commit_compression(
                attempt.id, holder="h", archive_ids=ids, summary=summary, release=True
            )
    assert store.transcript.active_messages("s1") == before
    row = store.compressions.get_compression(attempt.id)
    assert row is not None and row.ended_at is None
    assert store.leases.get_lease("s1") is not None
    assert store.compressions.commit_compression(
        attempt.id, holder="h", archive_ids=ids, summary=summary, release=True
    )
