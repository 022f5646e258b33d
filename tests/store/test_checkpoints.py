"""Checkpoints: what files held before each turn changed them, numbered by step per session,
kept across a reopen, undone step by step, gone with their session."""

from __future__ import annotations

import pytest

from agent.store import SessionStore, StoreNotFound
from tests.store.conftest import StoreFactory


@pytest.fixture
def session(store: SessionStore) -> str:
    return store.sessions.create_session("s1").id


def test_the_first_record_of_a_path_in_a_turn_stands(store: SessionStore, session: str) -> None:
    assert store.checkpoints.record_before(session, "t1", "/w/a.txt", b"old\n")
    assert not store.checkpoints.record_before(session, "t1", "/w/a.txt", b"newer\n")
    assert store.checkpoints.record_before(session, "t1", "/w/new.txt", None)
    assert store.checkpoints.record_after("t1", "/w/a.txt", "abc")
    assert not store.checkpoints.record_after("t1", "/w/none.txt", "abc")
    rows = store.checkpoints.checkpoint_files(session)
    assert [(r.turn_id, r.step, r.path, r.before_data, r.after_sha) for r in rows] == [
        ("t1", 1, "/w/a.txt", b"old\n", "abc"),
        ("t1", 1, "/w/new.txt", None, None),
    ]
    assert not any(r.undone for r in rows)


def test_turns_take_steps_in_order_and_undo_marks_one_step(
    store: SessionStore, session: str
) -> None:
    store.checkpoints.record_before(session, "t1", "/w/a", b"1")
    store.checkpoints.record_before(session, "t2", "/w/a", b"2")
    store.checkpoints.record_before(session, "t1", "/w/b", b"")  # t1 keeps its step
    steps = {(r.turn_id, r.path): r.step for r in store.checkpoints.checkpoint_files(session)}
    assert steps == {("t1", "/w/a"): 1, ("t1", "/w/b"): 1, ("t2", "/w/a"): 2}
    assert store.checkpoints.mark_undone(session, 2) == 1
    assert store.checkpoints.mark_undone(session, 2) == 0  # undone already
    undone = {r.turn_id: r.undone for r in store.checkpoints.checkpoint_files(session)}
    assert undone == {"t1": False, "t2": True}
    store.checkpoints.record_before(session, "t3", "/w/c", b"3")  # after an undo: a new step
    assert max(r.step for r in store.checkpoints.checkpoint_files(session)) == 3


def test_binary_content_and_the_empty_file_survive_a_reopen(
    store_factory: StoreFactory, store: SessionStore, session: str
) -> None:
    data = bytes(range(256)) * 4
    store.checkpoints.record_before(session, "t1", "/w/bin", data)
    store.checkpoints.record_before(session, "t1", "/w/empty", b"")
    store.close()
    again = store_factory()
    rows = {r.path: r.before_data for r in again.checkpoints.checkpoint_files(session)}
    assert rows == {"/w/bin": data, "/w/empty": b""}


def test_a_checkpoint_needs_its_session_and_goes_with_it(store: SessionStore, session: str) -> None:
    with pytest.raises(StoreNotFound):
        store.checkpoints.record_before("nope", "t1", "/w/a", b"x")
    store.checkpoints.record_before(session, "t1", "/w/a", b"x")
    store.checkpoints.record_before(store.sessions.create_session("s2").id, "t9", "/w/a", b"y")
    assert store.sessions.delete_session(session)
    assert store.checkpoints.checkpoint_files(session) == []
    assert [r.turn_id for r in store.checkpoints.checkpoint_files("s2")] == ["t9"]
