"""Sessions: create, read, list order, rename, last error, cascade delete."""

from __future__ import annotations

import pytest

from agent.provider.types import ChatMessage
from agent.store import SessionStore, StoreError, StoreNotFound
from tests.store.conftest import FakeClock


def test_create_and_get(store: SessionStore, clock: FakeClock) -> None:
    row = store.sessions.create_session(
        "s1",
        title="first",
        model="m",
        cwd="/tmp",
        messages=[ChatMessage(role="system", content="be brief")],
    )
    assert row.id == "s1"
    assert (row.title, row.model, row.cwd) == ("first", "m", "/tmp")
    assert row.created_at == row.updated_at == clock.now
    assert row.compression_cooldown_until is None
    assert row.compression_cooldown_step == 0
    assert row.last_error is None
    assert store.sessions.get_session("s1") == row
    assert store.transcript.load_history("s1") == [ChatMessage(role="system", content="be brief")]
    assert store.sessions.get_session("nope") is None


def test_generated_ids_are_unique(store: SessionStore) -> None:
    ids = {store.sessions.create_session().id for _ in range(20)}
    assert len(ids) == 20


def test_duplicate_id_is_refused_and_writes_nothing(store: SessionStore) -> None:
    store.sessions.create_session("s1", title="a")
    with pytest.raises(StoreError, match="exists already"):
        store.sessions.create_session("s1", title="b", messages=[ChatMessage("user", "x")])
    assert store.sessions.get_session("s1") is not None
    assert store.sessions.get_session("s1").title == "a"  # type: ignore[union-attr]
    assert store.transcript.load_history("s1") == []


def test_list_is_most_recently_updated_first(store: SessionStore, clock: FakeClock) -> None:
    for sid in ("a", "b", "c"):
        store.sessions.create_session(sid)
        clock.advance(1)
    assert [s.id for s in store.sessions.list_sessions()] == ["c", "b", "a"]
    store.transcript.append_message("a", ChatMessage("user", "hello"))
    assert [s.id for s in store.sessions.list_sessions()] == ["a", "c", "b"]
    assert store.sessions.most_recent_session() is not None
    assert store.sessions.most_recent_session().id == "a"  # type: ignore[union-attr]
    assert [s.id for s in store.sessions.list_sessions(limit=2)] == ["a", "c"]
    assert [s.id for s in store.sessions.list_sessions(limit=2, offset=2)] == ["b"]


def test_ties_list_the_newest_created_first(store: SessionStore) -> None:
    for sid in ("a", "b", "c"):
        store.sessions.create_session(sid)  # same clock reading for all three
    assert [s.id for s in store.sessions.list_sessions()] == ["c", "b", "a"]


def test_most_recent_of_nothing_is_none(store: SessionStore) -> None:
    assert store.sessions.most_recent_session() is None
    assert store.sessions.list_sessions() == []


def test_rename_updates_title_and_time(store: SessionStore, clock: FakeClock) -> None:
    store.sessions.create_session("s1", title="old")
    clock.advance(5)
    store.sessions.rename_session("s1", "new")
    row = store.sessions.get_session("s1")
    assert row is not None
    assert row.title == "new"
    assert row.updated_at == clock.now
    with pytest.raises(StoreNotFound):
        store.sessions.rename_session("missing", "x")


def test_last_error(store: SessionStore) -> None:
    store.sessions.create_session("s1")
    store.sessions.set_last_error("s1", "the model server refused the connection")
    assert store.sessions.get_session("s1").last_error == "the model server refused the connection"  # type: ignore[union-attr]
    store.sessions.set_last_error("s1", None)
    assert store.sessions.get_session("s1").last_error is None  # type: ignore[union-attr]
    with pytest.raises(StoreNotFound):
        store.sessions.set_last_error("missing", "x")


def test_delete_cascades_to_every_group(store: SessionStore) -> None:
    store.sessions.create_session("s1")
    store.sessions.create_session("s2")
    store.turns.start_turn("t1", "s1", "hello")
    store.transcript.append_message("s1", ChatMessage("assistant", "hi"), turn_id="t1")
    assert store.leases.acquire_lease("s1", "h", 30)
    store.compressions.begin_compression("s1", "h")
    store.turns.start_turn("t2", "s2", "other")
    assert store.sessions.delete_session("s1") is True
    assert store.sessions.delete_session("s1") is False
    assert store.sessions.get_session("s1") is None
    assert store.transcript.all_messages("s1") == []
    assert store.turns.get_turn("t1") is None
    assert store.leases.get_lease("s1") is None
    assert store.compressions.latest_compression("s1") is None
    assert store.compressions.get_cooldown("s1") is None
    assert store.turns.get_turn("t2") is not None
    assert [m.content for m in store.transcript.all_messages("s2")] == ["other"]


def test_ids_that_start_with_a_prefix_are_found_as_typed(store: SessionStore) -> None:
    for session_id in ("ab12", "ab19", "cd34", "a_b%"):
        store.sessions.create_session(session_id)
    assert store.sessions.ids_starting_with("ab", limit=5) == ["ab12", "ab19"]
    assert store.sessions.ids_starting_with("ab") == ["ab12", "ab19"]
    assert store.sessions.ids_starting_with("cd3") == ["cd34"]
    assert store.sessions.ids_starting_with("a_") == ["a_b%"]  # no pattern: the start as typed
    assert (
        store.sessions.ids_starting_with("a%") == []
        and store.sessions.ids_starting_with("zz") == []
    )
