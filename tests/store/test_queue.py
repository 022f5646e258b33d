"""The prompt queue: prompts are saved when queued; a crash or a quit turns them into turns that
never ran, in queue order; starting one removes its queued row; a removed one is never saved."""

from __future__ import annotations

from contextlib import closing
from dataclasses import dataclass, field

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, given, settings

from agent.provider.types import ChatMessage
from agent.store import (
    CRASH_EXIT_REASON,
    NOT_SENT_CRASH_ERROR,
    SessionStore,
    StoreError,
    StoreNotFound,
    TurnOutcome,
)
from tests.store.conftest import FakeClock, ScriptedLiveness, StoreFactory

DEAD = "gone-host:4242:1"
"""The owner of a desk that crashed (the reopening stores are told it is not alive)."""

DONE = TurnOutcome(status="completed", exit_reason="completed")


def crashed(store_factory: StoreFactory) -> SessionStore:
    """A store of the desk that will crash: its owner is ``DEAD``."""
    return store_factory(liveness=ScriptedLiveness(DEAD))


def reopen(store_factory: StoreFactory, alive: set[str] | None = None) -> SessionStore:
    """The next desk on the database: only owners in ``alive`` (besides itself) still run."""
    live = alive or set()
    return store_factory(liveness=ScriptedLiveness(alive=live.__contains__))


def transcript(store: SessionStore, sid: str) -> list[tuple[str, str, str | None]]:
    return [(m.role, m.content, m.turn_id) for m in store.transcript.all_messages(sid)]


def test_queue_order_is_call_order_even_when_the_clock_goes_back(
    store: SessionStore, clock: FakeClock
) -> None:
    store.sessions.create_session("s1")
    store.sessions.create_session("s2")
    for n, step in enumerate([0.0, 0.0, -30.0, 5.0]):
        clock.advance(step)
        assert store.queue.queue_prompt(f"q{n}", "s1", f"prompt {n}")
    store.queue.queue_prompt("other", "s2", "elsewhere")
    rows = store.queue.queued_prompts("s1")
    assert [(q.turn_id, q.prompt) for q in rows] == [(f"q{n}", f"prompt {n}") for n in range(4)]
    assert all(q.owner == store.owner for q in rows)
    assert [q.queued_at for q in rows] == sorted(q.queued_at for q in rows)
    assert [q.turn_id for q in store.queue.queued_prompts() if q.session_id == "s1"] == [
        "q0",
        "q1",
        "q2",
        "q3",
    ]
    assert [q.turn_id for q in store.queue.queued_prompts("s2")] == ["other"]
    with pytest.raises(StoreError, match="exists already"):
        store.queue.queue_prompt("q1", "s1", "again")
    with pytest.raises(StoreNotFound):
        store.queue.queue_prompt("q9", "nope", "x")


def test_start_turn_takes_the_prompt_out_of_the_queue(store: SessionStore) -> None:
    store.sessions.create_session("s1")
    store.queue.queue_prompt("q1", "s1", "first")
    store.queue.queue_prompt("q2", "s1", "second")
    store.turns.start_turn("q1", "s1", "first")
    assert [q.turn_id for q in store.queue.queued_prompts("s1")] == ["q2"]
    assert transcript(store, "s1") == [("user", "first", "q1")]
    # the gateway saving the queue after its worker started the turn writes nothing
    assert store.queue.queue_prompt("q1", "s1", "first") is False
    assert [q.turn_id for q in store.queue.queued_prompts("s1")] == ["q2"]


def test_a_removed_prompt_is_never_saved(store_factory: StoreFactory, clock: FakeClock) -> None:
    with closing(crashed(store_factory)) as s:
        s.sessions.create_session("s1")
        s.queue.queue_prompt("q1", "s1", "keep")
        s.queue.queue_prompt("q2", "s1", "removed")
        assert s.queue.remove_queued_prompt("q2")
        assert not s.queue.remove_queued_prompt("q2")
    with closing(reopen(store_factory)) as s:
        assert transcript(s, "s1") == [("user", "keep", "q1")]
        assert s.turns.get_turn("q2") is None


def test_an_edited_prompt_keeps_its_place_and_a_crash_keeps_the_edit(
    store_factory: StoreFactory, clock: FakeClock
) -> None:
    with closing(crashed(store_factory)) as s:
        s.sessions.create_session("s1")
        for n in range(3):
            clock.advance(1)
            s.queue.queue_prompt(f"q{n}", "s1", f"waiting {n}")
        assert s.queue.edit_queued_prompt("q1", "edited 1")
        assert not s.queue.edit_queued_prompt("nope", "x")
        queued = s.queue.queued_prompts("s1")
        assert [(q.turn_id, q.prompt) for q in queued] == [
            ("q0", "waiting 0"),
            ("q1", "edited 1"),
            ("q2", "waiting 2"),
        ]
        s.turns.start_turn("q0", "s1", "waiting 0")
        assert not s.queue.edit_queued_prompt("q0", "too late")  # it started
    with closing(reopen(store_factory)) as s:
        assert transcript(s, "s1") == [
            ("user", "waiting 0", "q0"),
            ("user", "edited 1", "q1"),
            ("user", "waiting 2", "q2"),
        ]


def test_a_crash_turns_the_queue_into_turns_that_never_ran_in_order(
    store_factory: StoreFactory, clock: FakeClock
) -> None:
    with closing(crashed(store_factory)) as s:
        s.sessions.create_session("s1")
        s.turns.start_turn("t1", "s1", "running")
        s.turns.save_draft("t1", "half a rep")
        for n in range(3):
            clock.advance(1)
            s.queue.queue_prompt(f"q{n}", "s1", f"waiting {n}")
        s.sessions.create_session("s2")
        s.queue.queue_prompt("solo", "s2", "alone")
    clock.advance(60)
    with closing(reopen(store_factory)) as s:
        assert s.queue.queued_prompts() == [] and s.turns.open_turns() == []
        assert [(m.role, m.content, m.partial) for m in s.transcript.all_messages("s1")] == [
            ("user", "running", False),
            ("assistant", "half a rep", True),
            ("user", "waiting 0", False),
            ("user", "waiting 1", False),
            ("user", "waiting 2", False),
        ]
        assert [m.turn_id for m in s.transcript.all_messages("s1")][2:] == ["q0", "q1", "q2"]
        for n in range(3):
            row = s.turns.get_turn(f"q{n}")
            assert row is not None and row.not_sent
            assert (row.status, row.exit_reason, row.error) == (
                "failed",
                CRASH_EXIT_REASON,
                NOT_SENT_CRASH_ERROR,
            )
            assert row.ended_at == clock.now and row.started_at < row.ended_at
            assert row.owner == DEAD and row.stop_issuer is None
        assert transcript(s, "s2") == [("user", "alone", "solo")]
        assert s.turns.close_turn("q0", DONE) is False  # closed once, for good
        assert s.queue.recover_queued_prompts(include_live=True) == []


def test_recovery_leaves_queues_that_live_desks_hold(
    store_factory: StoreFactory, clock: FakeClock
) -> None:
    live = "other-desk:7:7"
    with closing(store_factory(liveness=ScriptedLiveness(live), recover=False)) as s:
        s.sessions.create_session("held")
        s.turns.start_turn("t1", "held", "running elsewhere")
        s.queue.queue_prompt("q1", "held", "waits elsewhere")
        s.sessions.create_session("mixed")
        s.turns.start_turn("t2", "mixed", "running elsewhere")
    with closing(store_factory(liveness=ScriptedLiveness(DEAD), recover=False)) as s:
        s.queue.queue_prompt("q2", "mixed", "left by the dead desk")  # its turn runs elsewhere
        s.sessions.create_session("dead")
        s.queue.queue_prompt("q3", "dead", "left by the dead desk")
    with closing(reopen(store_factory, alive={live})) as s:
        assert [q.turn_id for q in s.queue.queued_prompts()] == ["q1", "q2"]
        assert transcript(s, "dead") == [("user", "left by the dead desk", "q3")]
        assert s.queue.recover_queued_prompts() == []
    with closing(store_factory(recover=False)) as s:  # this process queued: its own
        s.queue.queue_prompt("q4", "dead", "mine")
        assert s.queue.recover_queued_prompts() == []
        assert s.turns.recover_open_turns(include_live=True) == ["t1", "t2"]
        assert s.queue.recover_queued_prompts(include_live=True) == ["q1", "q2", "q4"]


def test_dropped_prompts_close_as_not_sent_once(store: SessionStore, clock: FakeClock) -> None:
    store.sessions.create_session("s1")
    store.queue.queue_prompt("q1", "s1", "one")
    clock.advance(1)
    queued_at = clock.now
    store.queue.queue_prompt("q2", "s1", "two")
    clock.advance(1)
    outcome = TurnOutcome(
        status="interrupted",
        exit_reason="interrupted_by_system(gateway.shutdown)",
        stop_issuer="system",
        stop_surface="gateway.shutdown",
        stop_reason="desk is shutting down",
        error="not sent: desk is shutting down",
    )
    prompts = [("q1", "one"), ("q2", "two"), ("q3", "never saved as queued")]
    assert store.queue.close_unsent_prompts("s1", prompts, outcome) == ["q1", "q2", "q3"]
    assert store.queue.close_unsent_prompts("s1", prompts, outcome) == []  # nothing doubles
    assert store.queue.queued_prompts() == []
    assert [c for _r, c, _t in transcript(store, "s1")] == ["one", "two", "never saved as queued"]
    row = store.turns.get_turn("q2")
    assert row is not None and row.not_sent and row.started_at == queued_at
    assert (row.status, row.exit_reason, row.stop_issuer, row.stop_reason) == (
        "interrupted",
        "interrupted_by_system(gateway.shutdown)",
        "system",
        "desk is shutting down",
    )
    assert store.queue.queue_prompt("q1", "s1", "one") is False  # a late save of the queue: nothing
    with pytest.raises(StoreNotFound):
        store.queue.close_unsent_prompts("nope", prompts, outcome)


def test_only_a_prompt_not_sent_is_dismissed_and_only_once(store: SessionStore) -> None:
    store.sessions.create_session("s1")
    outcome = TurnOutcome(
        status="interrupted",
        exit_reason="interrupted_by_system(gateway.shutdown)",
        stop_issuer="system",
        stop_surface="gateway.shutdown",
        error="not sent: desk is shutting down",
    )
    store.queue.close_unsent_prompts("s1", [("q1", "one"), ("q2", "two")], outcome)
    store.turns.start_turn("t1", "s1", "ran")
    assert store.turns.dismiss_unsent("q1")
    assert not store.turns.dismiss_unsent("q1")  # once
    assert not store.turns.dismiss_unsent("t1")  # it runs: not a prompt left unsent
    store.turns.close_turn("t1", TurnOutcome(status="completed", exit_reason="completed"))
    assert not store.turns.dismiss_unsent("t1")  # it ran
    assert not store.turns.dismiss_unsent("nope")
    dismissed = {t.id: t.dismissed for t in store.turns.list_turns("s1")}
    assert dismissed == {"q1": 1, "q2": None, "t1": None}


def test_deleting_a_session_deletes_its_queue(store: SessionStore) -> None:
    store.sessions.create_session("s1")
    store.queue.queue_prompt("q1", "s1", "one")
    assert store.sessions.delete_session("s1")
    assert store.queue.queued_prompts() == []


# -- random sequences ---------------------------------------------------------------------------


@dataclass
class Model:
    """What the person expects: every prompt not removed, once, in the order it was queued."""

    queue: list[tuple[str, str]] = field(default_factory=list)
    kept: list[tuple[str, str]] = field(default_factory=list)  # sent or closed, in order
    running: str | None = None
    removed: set[str] = field(default_factory=set)


OPS = st.lists(
    st.sampled_from(["queue", "queue", "queue", "remove", "start", "finish", "crash"]),
    max_size=24,
)


# One factory for every example, each on a fresh database of its own.
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=OPS, picks=st.lists(st.integers(0, 10), min_size=24, max_size=24))
def test_random_queue_remove_start_crash_keeps_every_prompt_once_in_order(
    store_factory: StoreFactory, ops: list[str], picks: list[int]
) -> None:
    factory = store_factory.fresh()
    clock = factory.clock
    generation = 0

    def open_store() -> SessionStore:
        owner = f"model-host:{generation + 1}:1"
        return factory(liveness=ScriptedLiveness(owner, lambda o: o == owner))

    store = open_store()
    model = Model()
    try:
        store.sessions.create_session("s")
        for n, (op, pick) in enumerate(zip(ops, picks, strict=False)):
            clock.advance(pick % 3 - 1)  # the clock may stand still or go back
            if op == "queue":
                model.queue.append((f"p{n}", f"prompt {n}"))
                assert store.queue.queue_prompt(f"p{n}", "s", f"prompt {n}")
            elif op == "remove" and model.queue:
                turn_id, _ = model.queue.pop(pick % len(model.queue))
                model.removed.add(turn_id)
                assert store.queue.remove_queued_prompt(turn_id)
            elif op == "start" and model.queue and model.running is None:
                turn_id, prompt = model.queue.pop(0)
                store.turns.start_turn(turn_id, "s", prompt)
                model.kept.append((turn_id, prompt))
                model.running = turn_id
            elif op == "finish" and model.running is not None:
                reply = ChatMessage("assistant", f"re {model.running}")
                assert store.turns.record_turn_end(model.running, [reply], DONE)
                model.running = None
            elif op == "crash":
                store.close()
                generation += 1
                store = open_store()
                model.kept.extend(model.queue)  # closed as not sent, after the running turn
                model.queue.clear()
                model.running = None
            users = [
                (m.turn_id, m.content)
                for m in store.transcript.all_messages("s")
                if m.role == "user"
            ]
            assert users == model.kept
            assert [(q.turn_id, q.prompt) for q in store.queue.queued_prompts("s")] == model.queue
            assert not model.removed & {t.id for t in store.turns.list_turns("s")}
    finally:
        factory.close()
