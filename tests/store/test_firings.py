"""Schedule firings: of several stores on one database exactly one wins each firing (its row
inserted, or nothing), each firing's outcome is noted once, and a schedule has one session."""

from __future__ import annotations

import threading
from contextlib import closing

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.store import CRASH_EXIT_REASON, SessionStore
from tests.store.conftest import FakeClock, ScriptedLiveness, StoreFactory

A, B = "desk-a:101:1", "desk-b:202:2"


def two(store_factory: StoreFactory) -> tuple[SessionStore, SessionStore]:
    return (
        store_factory(liveness=ScriptedLiveness(A, lambda _o: True)),
        store_factory(liveness=ScriptedLiveness(B, lambda _o: True)),
    )


def test_one_store_wins_each_firing_and_the_row_names_it(store_factory: StoreFactory) -> None:
    a, b = two(store_factory)
    assert a.firings.claim_firing("nightly", 3600.0)
    assert not b.firings.claim_firing("nightly", 3600.0)
    assert not a.firings.claim_firing("nightly", 3600.0)  # once, even for the winner
    assert b.firings.claim_firing("nightly", 7200.0)
    assert b.firings.claim_firing("weekly", 3600.0)  # another schedule, the same time
    rows = a.firings.last_firings("nightly", limit=5)
    assert [(r.due_at, r.owner, r.outcome) for r in rows] == [(7200.0, B, None), (3600.0, A, None)]


def test_a_firing_notes_its_turn_and_its_outcome_once(store_factory: StoreFactory) -> None:
    a, b = two(store_factory)
    a.sessions.create_session("s1", title="nightly")
    assert a.firings.claim_firing("nightly", 60.0)
    assert not b.firings.start_firing("nightly", 60.0, "s1", "t1")  # not b's firing
    assert a.firings.start_firing("nightly", 60.0, "s1", "t1")
    assert a.firings.end_firing("nightly", 60.0, "completed")
    assert not b.firings.end_firing("nightly", 60.0, "interrupted_by_user")
    (row,) = b.firings.last_firings("nightly")
    assert (row.session_id, row.turn_id, row.outcome) == ("s1", "t1", "completed")
    assert row.ended_at is not None


def test_a_schedule_keeps_the_first_session_bound_and_loses_it_with_the_session(
    store_factory: StoreFactory,
) -> None:
    a, b = two(store_factory)
    assert a.firings.schedule_session("nightly") is None
    a.sessions.create_session("s1", title="nightly")
    b.sessions.create_session("s2", title="nightly")
    assert a.firings.bind_session("nightly", "s1") == "s1"
    assert b.firings.bind_session("nightly", "s2") == "s1"  # the first one stands
    assert b.firings.schedule_session("nightly") == "s1"
    a.release_session("s1")
    assert b.sessions.delete_session("s1")
    assert a.firings.schedule_session("nightly") is None  # deleted with its session


def test_two_stores_racing_for_the_same_firings_win_each_exactly_once(
    store_factory: StoreFactory,
) -> None:
    stores = two(store_factory)
    due = [float(60 * i) for i in range(1, 21)]
    won: dict[str, list[float]] = {A: [], B: []}
    barrier = threading.Barrier(2)

    def race(store: SessionStore, owner: str) -> None:
        barrier.wait()
        won[owner] = [d for d in due if store.firings.claim_firing("every", d)]

    threads = [
        threading.Thread(target=race, args=(s, o)) for s, o in zip(stores, (A, B), strict=True)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(won[A] + won[B]) == due


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(claims=st.lists(st.tuples(st.booleans(), st.integers(0, 4)), max_size=12))
def test_every_firing_has_one_winner_whatever_the_order(
    store_factory: StoreFactory, claims: list[tuple[bool, int]]
) -> None:
    factory = store_factory.fresh()
    try:
        a, b = two(factory)
        winners: dict[int, str] = {}
        for by_a, slot in claims:
            store, owner = (a, A) if by_a else (b, B)
            if store.firings.claim_firing("s", float(slot)):
                assert slot not in winners
                winners[slot] = owner
            else:
                assert slot in winners
        rows = a.firings.last_firings("s", limit=10)
        assert {int(r.due_at): r.owner for r in rows} == winners
    finally:
        factory.close()


def test_a_host_killed_between_its_firing_s_turn_and_the_note_has_both_recovered(
    store_factory: StoreFactory, clock: FakeClock
) -> None:
    dead = "desk-dead:4242:1"
    with closing(store_factory(liveness=ScriptedLiveness(dead))) as s:
        s.sessions.create_session("s1", title="nightly")
        assert s.firings.bind_session("nightly", "s1") == "s1"
        assert s.firings.claim_firing("nightly", 60.0)
        assert s.firings.start_firing("nightly", 60.0, "s1", "t1")
        s.turns.start_turn("t1", "s1", "first")  # killed before its outcome was noted
        clock.advance(1)
        assert s.firings.claim_firing("nightly", 120.0)
        s.turns.start_turn("t2", "s1", "second")  # killed before the turn was noted
        clock.advance(1)
        assert s.firings.claim_firing("nightly", 180.0)  # killed before its turn existed
    clock.advance(60)
    with closing(store_factory(liveness=ScriptedLiveness(B, lambda o: o != dead))) as s:
        rows = s.firings.last_firings("nightly", limit=5)
        assert [(r.due_at, r.turn_id, r.outcome) for r in rows] == [
            (180.0, None, CRASH_EXIT_REASON),
            (120.0, "t2", CRASH_EXIT_REASON),
            (60.0, "t1", CRASH_EXIT_REASON),
        ]
        assert all(r.ended_at == clock.now for r in rows)
