"""Compressions: the cooldown, attempts (generations, phases, exactly-once finish) and the commit
that archives a run and puts its summary in its place, checking the lease in one transaction."""

from __future__ import annotations

from contextlib import closing

import pytest

from agent.provider.types import ChatMessage, Role
from agent.store import Cooldown, MessageRow, SessionStore, StoreNotFound
from tests.store.conftest import FakeClock, StoreFactory


@pytest.fixture
def session(store: SessionStore) -> str:
    row = store.sessions.create_session("s1", messages=[ChatMessage("system", "sys")])
    for i in range(6):
        role: Role = "user" if i % 2 == 0 else "assistant"
        store.transcript.append_message("s1", ChatMessage(role, f"m{i}"))
    return row.id


def test_cooldown_round_trips_and_survives_reopen(
    store_factory: StoreFactory, clock: FakeClock
) -> None:
    with closing(store_factory()) as s:
        s.sessions.create_session("s1")
        assert s.compressions.get_cooldown("s1") == Cooldown(until=None, step=0)
        s.compressions.set_cooldown("s1", clock.now + 60, 1)
    with closing(store_factory()) as s:
        assert s.compressions.get_cooldown("s1") == Cooldown(until=clock.now + 60, step=1)
        s.compressions.set_cooldown("s1", None, 0)
        assert s.compressions.get_cooldown("s1") == Cooldown(until=None, step=0)
        assert s.compressions.get_cooldown("missing") is None
        with pytest.raises(StoreNotFound):
            s.compressions.set_cooldown("missing", None, 0)


def test_commit_archives_a_run_and_puts_the_summary_in_its_place(
    store: SessionStore, session: str
) -> None:
    before = store.transcript.active_messages(session)
    middle = [m.id for m in before[2:5]]
    assert store.leases.acquire_lease(session, "h", ttl_s=30)
    store.compressions.set_cooldown(session, 999.0, 2)
    attempt = store.compressions.begin_compression(session, "h")
    assert attempt.generation == 1 and attempt.phase == "acquire lease"
    assert store.compressions.set_compression_phase(attempt.id, "summarize")
    summary = store.compressions.commit_compression(
        attempt.id,
        holder="h",
        archive_ids=middle,
        summary=ChatMessage("user", "[summary of m1..m3]"),
        tokens_in=30,
        tokens_out=8,
    )
    assert summary is not None
    assert summary.position == len(before)  # appended, never reusing a position
    assert summary.order_key == before[2].order_key  # but read in the place of the middle
    assert [m.content for m in store.transcript.load_history(session)] == [
        "sys",
        "m0",
        "[summary of m1..m3]",
        "m4",
        "m5",
    ]
    everything = store.transcript.all_messages(session)
    assert [m.position for m in everything] == list(range(len(before) + 1))
    archived = [m for m in everything if not m.active]
    assert [m.id for m in archived] == middle
    assert all(m.archived_by == attempt.id for m in archived)
    done = store.compressions.get_compression(attempt.id)
    assert done is not None
    assert (done.outcome, done.phase, done.summary_message_id) == ("committed", "done", summary.id)
    assert (done.tokens_in, done.tokens_out) == (30, 8)
    assert store.compressions.get_cooldown(session) == Cooldown(until=None, step=0)
    # New messages still go after the tail, and a second compression may swallow the summary.
    store.transcript.append_message(session, ChatMessage("user", "m6"))
    second = store.compressions.begin_compression(session, "h")
    ids = [m.id for m in store.transcript.active_messages(session)[1:4]]  # m0, summary, m4
    assert store.compressions.commit_compression(
        second.id, holder="h", archive_ids=ids, summary=ChatMessage("user", "[s2]")
    )
    assert [m.content for m in store.transcript.load_history(session)] == [
        "sys",
        "[s2]",
        "m5",
        "m6",
    ]


def test_commit_is_refused_without_a_live_lease_or_when_superseded(
    store: SessionStore, session: str, clock: FakeClock
) -> None:
    before = store.transcript.load_history(session)
    ids = [m.id for m in store.transcript.active_messages(session)[1:3]]
    first = store.compressions.begin_compression(session, "a")
    summary = ChatMessage("user", "s")

    def commit_first() -> MessageRow | None:
        return store.compressions.commit_compression(
            first.id, holder="a", archive_ids=ids, summary=summary
        )

    # No lease at all.
    assert commit_first() is None
    # Someone else's lease.
    assert store.leases.acquire_lease(session, "b", ttl_s=10)
    assert commit_first() is None
    # Our lease, expired.
    clock.advance(11)
    assert store.leases.acquire_lease(session, "a", ttl_s=10)
    clock.advance(10)
    assert commit_first() is None
    # A newer attempt exists: the older one (finishing late) changes nothing.
    assert store.leases.acquire_lease(session, "a", ttl_s=10)
    store.compressions.begin_compression(session, "a")
    assert commit_first() is None
    assert store.transcript.load_history(session) == before


def test_commit_checks_the_run(store: SessionStore, session: str) -> None:
    active = store.transcript.active_messages(session)
    assert store.leases.acquire_lease(session, "h", ttl_s=30)
    attempt = store.compressions.begin_compression(session, "h")
    summary = ChatMessage("user", "s")
    with pytest.raises(ValueError, match="consecutive"):
        store.compressions.commit_compression(
            attempt.id, holder="h", archive_ids=[active[1].id, active[3].id], summary=summary
        )
    with pytest.raises(ValueError, match="active messages"):
        store.compressions.commit_compression(
            attempt.id, holder="h", archive_ids=[10_000], summary=summary
        )
    with pytest.raises(ValueError):
        store.compressions.commit_compression(
            attempt.id, holder="h", archive_ids=[], summary=summary
        )
    with pytest.raises(StoreNotFound):
        store.compressions.commit_compression(
            12345, holder="h", archive_ids=[active[1].id], summary=summary
        )
    assert store.transcript.active_messages(session) == active


def test_finish_is_once_and_only_the_newest_attempt_sets_the_cooldown(
    store: SessionStore, session: str, clock: FakeClock
) -> None:
    old = store.compressions.begin_compression(session, "a")
    new = store.compressions.begin_compression(session, "b")
    assert new.generation == old.generation + 1
    late = Cooldown(until=clock.now + 900, step=3)
    assert store.compressions.finish_compression(old.id, "timeout", error="too slow", cooldown=late)
    cooldown = store.compressions.get_cooldown(session)
    assert cooldown == Cooldown(until=None, step=0)  # superseded: unchanged
    assert not store.compressions.finish_compression(old.id, "failed")
    row = store.compressions.get_compression(old.id)
    assert row is not None and (row.outcome, row.error) == ("timeout", "too slow")
    fresh = Cooldown(until=clock.now + 60, step=1)
    assert store.compressions.finish_compression(new.id, "failed", error="boom", cooldown=fresh)
    assert store.compressions.get_cooldown(session) == fresh
    assert store.compressions.latest_compression(session) == store.compressions.get_compression(
        new.id
    )
    with pytest.raises(StoreNotFound):
        store.compressions.finish_compression(9999, "failed")


def test_a_cancelled_attempt_leaves_everything_as_before(store: SessionStore, session: str) -> None:
    store.compressions.set_cooldown(session, 5.0, 1)
    history = store.transcript.load_history(session)
    assert store.leases.acquire_lease(session, "h", ttl_s=30)
    attempt = store.compressions.begin_compression(session, "h")
    assert store.compressions.finish_compression(attempt.id, "cancelled")
    assert store.leases.release_lease(session, "h")
    assert store.transcript.load_history(session) == history
    assert store.compressions.get_cooldown(session) == Cooldown(until=5.0, step=1)
    assert store.leases.get_lease(session) is None
    assert not store.compressions.set_compression_phase(attempt.id, "commit")


def test_recovery_abandons_attempts_without_a_live_lease(
    store_factory: StoreFactory, clock: FakeClock
) -> None:
    with closing(store_factory()) as s:
        s.sessions.create_session("s1")
        s.sessions.create_session("s2")
        assert s.leases.acquire_lease("s1", "h1", ttl_s=30)
        dead = s.compressions.begin_compression("s1", "h1")
        assert s.leases.acquire_lease("s2", "h2", ttl_s=300)
        alive = s.compressions.begin_compression("s2", "h2")
    clock.advance(60)
    with closing(store_factory()) as s:
        row = s.compressions.get_compression(dead.id)
        assert row is not None and row.outcome == "abandoned" and row.ended_at == clock.now
        still = s.compressions.get_compression(alive.id)
        assert still is not None and still.ended_at is None


def test_cancel_and_release_in_one_transaction(
    store: SessionStore, session: str, clock: FakeClock
) -> None:
    assert store.leases.acquire_lease(session, "h", ttl_s=30)
    attempt = store.compressions.begin_compression(session, "h")
    assert store.compressions.finish_compression(attempt.id, "cancelled", release=True)
    assert store.leases.get_lease(session) is None
    # A late, second finish releases nothing: another holder's lease stays.
    assert store.leases.acquire_lease(session, "other", ttl_s=30)
    assert not store.compressions.finish_compression(attempt.id, "cancelled", release=True)
    assert store.leases.get_lease(session).holder == "other"  # type: ignore[union-attr]


def test_finish_with_release_spares_a_newer_holder(
    store: SessionStore, session: str, clock: FakeClock
) -> None:
    assert store.leases.acquire_lease(session, "slow", ttl_s=10)
    attempt = store.compressions.begin_compression(session, "slow")
    clock.advance(11)
    assert store.leases.acquire_lease(session, "fast", ttl_s=10)
    assert store.compressions.finish_compression(attempt.id, "timeout", release=True)
    assert store.leases.get_lease(session).holder == "fast"  # type: ignore[union-attr]


def test_commit_and_release_in_one_transaction(store: SessionStore, session: str) -> None:
    assert store.leases.acquire_lease(session, "h", ttl_s=30)
    attempt = store.compressions.begin_compression(session, "h")
    ids = [m.id for m in store.transcript.active_messages(session)[1:3]]
    row = store.compressions.commit_compression(
        attempt.id, holder="h", archive_ids=ids, summary=ChatMessage("user", "s"), release=True
    )
    assert row is not None
    assert store.leases.get_lease(session) is None
