"""Session claims: a session is live in one owner at a time; another live owner is refused
with one line naming the session, a released or closed claim is free, and an owner that is gone
loses its claims at once."""

from __future__ import annotations

import threading
from contextlib import closing

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.provider.types import ChatMessage
from agent.store import SessionStore, StoreFenced, StoreNotFound
from tests.store.conftest import ScriptedLiveness, StoreFactory

A, B, C = "desk-a:101:1", "desk-b:202:2", "desk-c:303:3"


class Alive:
    """Which owners run, as the test says (every owner runs until it is told otherwise)."""

    def __init__(self) -> None:
        self.gone: set[str] = set()

    def __call__(self, owner: str) -> bool:
        return owner not in self.gone


def opener(store_factory: StoreFactory, alive: Alive) -> dict[str, SessionStore]:
    return {o: store_factory(liveness=ScriptedLiveness(o, alive)) for o in (A, B)}


def test_a_session_another_live_owner_holds_is_refused_with_one_line(
    store_factory: StoreFactory,
) -> None:
    alive = Alive()
    stores = opener(store_factory, alive)
    stores[A].sessions.create_session("s1")  # creating claims it
    with pytest.raises(StoreFenced) as refused:
        stores[B].claim_session("s1")
    assert "s1" in refused.value.message and "\n" not in refused.value.message
    assert refused.value.owner == A
    assert stores[A].claim_session("s1") >= 1  # its holder keeps it


def test_a_released_claim_is_free_and_then_refused_to_its_old_holder(
    store_factory: StoreFactory,
) -> None:
    stores = opener(store_factory, Alive())
    stores[A].sessions.create_session("s1")
    first = stores[A].claim_session("s1")
    stores[A].release_session("s1")
    assert stores[B].claim_session("s1") > first  # a larger fencing number
    with pytest.raises(StoreFenced):
        stores[A].claim_session("s1")
    stores[B].release_session("unknown")  # nothing held: nothing happens


def test_closing_a_store_gives_its_claims_back(store_factory: StoreFactory) -> None:
    alive = Alive()
    a = store_factory(liveness=ScriptedLiveness(A, alive))
    a.sessions.create_session("s1")
    a.sessions.create_session("s2")
    a.close()
    with closing(store_factory(liveness=ScriptedLiveness(B, alive))) as b:
        b.claim_session("s1")
        b.claim_session("s2")


def test_an_owner_that_is_gone_loses_its_claim_at_once(store_factory: StoreFactory) -> None:
    alive = Alive()
    stores = opener(store_factory, alive)
    stores[A].sessions.create_session("s1")
    with pytest.raises(StoreFenced):
        stores[B].claim_session("s1")
    alive.gone.add(A)  # killed: its claim is still on the row
    stores[B].claim_session("s1")


def test_a_session_another_live_desk_holds_is_not_deleted_under_it(
    store_factory: StoreFactory,
) -> None:
    alive = Alive()
    stores = opener(store_factory, alive)
    stores[A].sessions.create_session("s1")  # open in desk A
    stores[A].transcript.append_message("s1", ChatMessage("user", "keep me"))
    with pytest.raises(StoreFenced) as refused:
        stores[B].sessions.delete_session("s1")
    assert "s1" in refused.value.message and refused.value.owner == A
    assert [m.content for m in stores[A].transcript.all_messages("s1")] == ["keep me"]
    alive.gone.add(A)  # desk A was killed: its session may go
    assert stores[B].sessions.delete_session("s1")
    assert stores[B].sessions.get_session("s1") is None


def test_claiming_a_missing_session_is_not_found(store: SessionStore) -> None:
    with pytest.raises(StoreNotFound):
        store.claim_session("missing")


def test_two_owners_claiming_at_the_same_moment_one_wins(store_factory: StoreFactory) -> None:
    alive = Alive()
    stores = opener(store_factory, alive)
    stores[A].sessions.create_session("s1")
    stores[A].release_session("s1")
    barrier = threading.Barrier(2)
    won: dict[str, bool] = {}

    def claim(owner: str) -> None:
        barrier.wait(10)
        try:
            stores[owner].claim_session("s1")
            won[owner] = True
        except StoreFenced:
            won[owner] = False

    threads = [threading.Thread(target=claim, args=(o,)) for o in (A, B)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert sorted(won.values()) == [False, True]


_OP = st.tuples(st.sampled_from(["claim", "release", "die"]), st.sampled_from([A, B, C]))


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=st.lists(_OP, max_size=12))
def test_at_most_one_live_owner_holds_a_session(
    store_factory: StoreFactory, ops: list[tuple[str, str]]
) -> None:
    factory = store_factory.fresh()
    try:
        alive = Alive()
        stores = {o: factory(liveness=ScriptedLiveness(o, alive)) for o in (A, B, C)}
        stores[A].sessions.create_session("s1")
        holder: str | None = A
        for op, owner in ops:
            if owner in alive.gone:
                continue
            if op == "die":
                alive.gone.add(owner)
                if holder == owner:
                    holder = None  # its claim stays on the row, but anyone may take it
            elif op == "release":
                stores[owner].release_session("s1")
                if holder == owner:
                    holder = None
            else:
                refused = holder not in (None, owner)
                try:
                    stores[owner].claim_session("s1")
                    assert not refused, f"{owner} took s1 from {holder}, who runs"
                    holder = owner
                except StoreFenced:
                    assert refused, f"{owner} was refused s1, which nobody live holds"
    finally:
        factory.close()


def test_recovery_that_includes_live_desks_takes_their_turns_over(
    store_factory: StoreFactory,
) -> None:
    alive = Alive()
    stores = opener(store_factory, alive)
    stores[A].sessions.create_session("s1")
    stores[A].turns.start_turn("t1", "s1", "running on desk a")
    assert stores[B].turns.recover_open_turns() == []  # desk a runs: the turn is its own
    assert stores[B].turns.recover_open_turns(include_live=True) == ["t1"]
    row = stores[B].turns.get_turn("t1")
    assert row is not None and row.ended_at is not None
