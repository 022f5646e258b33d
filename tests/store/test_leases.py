"""Compression leases: holder-qualified, exclusive until they expire, released only by their
holder."""

from __future__ import annotations

from contextlib import closing

import pytest

from agent.provider.types import ChatMessage, Role
from agent.store import SessionStore, StoreNotFound
from agent.store.liveness import lease_holder
from tests.store.conftest import FakeClock, ScriptedLiveness, StoreFactory


@pytest.fixture
def session(store: SessionStore) -> str:
    row = store.sessions.create_session("s1", messages=[ChatMessage("system", "sys")])
    for i in range(6):
        role: Role = "user" if i % 2 == 0 else "assistant"
        store.transcript.append_message("s1", ChatMessage(role, f"m{i}"))
    return row.id


def test_lease_is_exclusive_until_it_expires(
    store: SessionStore, session: str, clock: FakeClock
) -> None:
    assert store.leases.acquire_lease(session, "a", ttl_s=30)
    assert not store.leases.acquire_lease(session, "b", ttl_s=30)
    assert store.leases.acquire_lease(session, "a", ttl_s=30)  # ours already: renewed
    clock.advance(29.9)
    assert not store.leases.acquire_lease(session, "b", ttl_s=30)
    clock.advance(0.1)  # expires_at <= now: expired
    assert store.leases.acquire_lease(session, "b", ttl_s=30)
    lease = store.leases.get_lease(session)
    assert lease is not None
    assert (lease.holder, lease.acquired_at, lease.expires_at) == ("b", clock.now, clock.now + 30)


def test_renew_needs_the_holder_and_an_unexpired_lease(
    store: SessionStore, session: str, clock: FakeClock
) -> None:
    assert store.leases.acquire_lease(session, "a", ttl_s=10)
    clock.advance(5)
    assert store.leases.renew_lease(session, "a", ttl_s=10)
    assert store.leases.get_lease(session).expires_at == clock.now + 10  # type: ignore[union-attr]
    assert not store.leases.renew_lease(session, "b", ttl_s=10)
    clock.advance(10)
    assert not store.leases.renew_lease(session, "a", ttl_s=10)  # expired: exclusivity was lost
    assert not store.leases.renew_lease("missing", "a", ttl_s=10)


def test_release_deletes_only_its_own_holders_row(
    store: SessionStore, session: str, clock: FakeClock
) -> None:
    assert store.leases.acquire_lease(session, "a", ttl_s=10)
    clock.advance(11)
    assert store.leases.acquire_lease(session, "b", ttl_s=10)  # a's lease expired, b took it
    assert store.leases.release_lease(session, "a") is False  # a's late release must not free b's
    assert store.leases.get_lease(session).holder == "b"  # type: ignore[union-attr]
    assert store.leases.release_lease(session, "b") is True
    assert store.leases.release_lease(session, "b") is False
    assert store.leases.get_lease(session) is None
    assert store.leases.acquire_lease(session, "a", ttl_s=10)


def test_lease_on_a_missing_session(store: SessionStore) -> None:
    with pytest.raises(StoreNotFound):
        store.leases.acquire_lease("missing", "a", ttl_s=10)


def test_leases_expire_across_a_reopen(store_factory: StoreFactory, clock: FakeClock) -> None:
    with closing(store_factory()) as s:
        s.sessions.create_session("s1")
        assert s.leases.acquire_lease("s1", "crashed-holder", ttl_s=30)
    clock.advance(31)
    with closing(store_factory()) as s:
        assert s.leases.acquire_lease("s1", "new-holder", ttl_s=30)


def test_a_lease_whose_holder_is_provably_gone_is_taken_over_at_once(
    store_factory: StoreFactory,
) -> None:
    live = {"desk-a:1:1": True}
    liveness = ScriptedLiveness("desk-b:2:2", lambda owner: live.get(owner, False))
    with closing(store_factory(liveness=liveness)) as store:
        store.sessions.create_session("s", messages=[ChatMessage("system", "sys")])
        running = lease_holder("desk-a:1:1", "attempt-1")
        assert store.leases.acquire_lease("s", running, ttl_s=120)
        assert not store.leases.acquire_lease("s", "desk-b:2:2/attempt-2", ttl_s=120)
        assert not store.leases.acquire_lease("s", "desk-c", ttl_s=120)  # names no owner
        live["desk-a:1:1"] = False  # its process died with the lease unexpired
        assert store.leases.acquire_lease("s", "desk-b:2:2/attempt-2", ttl_s=120)
        lease = store.leases.get_lease("s")
        assert lease is not None and lease.holder == "desk-b:2:2/attempt-2"
        assert not store.leases.release_lease("s", running)  # the dead one's release: no-op


def test_reopening_releases_the_leases_of_holders_that_are_gone(
    store_factory: StoreFactory,
) -> None:
    with closing(store_factory(liveness=ScriptedLiveness("desk-a:1:1"))) as first:
        first.sessions.create_session("s", messages=[ChatMessage("system", "sys")])
        assert first.leases.acquire_lease("s", lease_holder("desk-a:1:1", "x"), ttl_s=120)
        attempt = first.compressions.begin_compression("s", lease_holder("desk-a:1:1", "x"))
    gone = ScriptedLiveness("desk-b:2:2", lambda _owner: False)
    with closing(store_factory(liveness=gone)) as later:
        assert later.leases.get_lease("s") is None
        row = later.compressions.get_compression(attempt.id)
        assert row is not None and row.outcome == "abandoned"


def test_a_lease_cannot_be_renewed_or_released_once_the_session_was_taken_over(
    store_factory: StoreFactory,
) -> None:
    if store_factory.backend == "sqlite":
        pytest.skip("SQLite's writes do not check the session's claim")
    a_owner, b_owner = "desk-a:101:1", "desk-b:202:2"
    gone: set[str] = set()

    def alive(owner: str) -> bool:
        return owner not in gone

    a = store_factory(liveness=ScriptedLiveness(a_owner, alive))
    b = store_factory(liveness=ScriptedLiveness(b_owner, alive))
    a.sessions.create_session("s1")
    holder = lease_holder(a_owner, "attempt-1")
    assert a.leases.acquire_lease("s1", holder, ttl_s=60)
    gone.add(a_owner)  # presumed dead: another desk takes the session over
    b.claim_session("s1")
    assert not a.leases.renew_lease("s1", holder, ttl_s=60)  # its compression must not commit
    assert not a.leases.release_lease("s1", holder)
