"""Turns: the prompt written at the start, exactly-once close, outcomes, drafts, crash recovery."""

from __future__ import annotations

import threading
from contextlib import closing
from dataclasses import replace

import pytest

from agent.events import StoppedTool, TurnResult, TurnTimings
from agent.provider.types import ChatMessage, ToolCall, Usage
from agent.stops import StopRequest, Surface
from agent.store import (
    CRASH_EXIT_REASON,
    LOST_RESULT,
    NOT_ANSWERED,
    NewMessage,
    SavedCall,
    SessionStore,
    StoreError,
    StoreNotFound,
    TurnOutcome,
    turn_messages,
)
from agent.store.calls import calls_from_json
from agent.usage import TokenUsage
from tests.store.conftest import FakeClock, ScriptedLiveness, StoreFactory

COMPLETED = TurnOutcome(status="completed", exit_reason="completed")


def test_start_turn_writes_the_turn_and_its_prompt(store: SessionStore, clock: FakeClock) -> None:
    store.sessions.create_session("s1")
    turn = store.turns.start_turn("t1", "s1", "hello", started_at=123.0)
    assert turn.is_open and turn.status == "running" and turn.started_at == 123.0
    assert turn.owner == store.owner
    (msg,) = store.transcript.all_messages("s1")
    assert (msg.role, msg.content, msg.turn_id) == ("user", "hello", "t1")
    with pytest.raises(StoreError, match="exists already"):
        store.turns.start_turn("t1", "s1", "again")
    with pytest.raises(StoreNotFound):
        store.turns.start_turn("t2", "missing", "x")
    store.turns.start_turn("t3", "s1", "no prompt row", record_prompt=False)
    assert len(store.transcript.all_messages("s1")) == 1


def test_a_turn_keeps_its_model_and_its_session_goes_on_with_it(store: SessionStore) -> None:
    store.sessions.create_session("s1")  # made before the server named a model
    first = store.turns.start_turn("t1", "s1", "hello", model="small")
    assert first.model == "small"
    session = store.sessions.get_session("s1")
    assert session is not None and session.model == "small"
    store.turns.close_turn("t1", COMPLETED)
    store.turns.start_turn("t2", "s1", "again", model="large")  # /model picked another
    store.turns.close_turn("t2", COMPLETED)
    store.turns.start_turn("c1", "s1", "a task", parent_turn_id="t2", model="tiny")
    store.turns.start_turn("t3", "s1", "unnamed")  # a turn that names none changes nothing
    assert [t.model for t in store.turns.list_turns("s1")] == ["small", "large", "tiny", None]
    session = store.sessions.get_session("s1")
    assert session is not None and session.model == "large"  # a child agent's is not the session's
    assert [s.model for s in store.sessions.list_sessions()] == ["large"]


def test_turn_closes_exactly_once(store: SessionStore, clock: FakeClock) -> None:
    store.sessions.create_session("s1")
    store.turns.start_turn("t1", "s1", "hello")
    stopped = TurnOutcome(
        status="interrupted",
        exit_reason="interrupted_by_user",
        stop_issuer="user",
        stop_surface="desk.key",
        stop_reason="stopped by you",
        stop_closed_ms=3.5,
        stop_exited_ms=9.0,
        children_ended=2,
    )
    clock.advance(2)
    reply = NewMessage(ChatMessage("assistant", "Hel"), partial=True)
    assert store.turns.record_turn_end("t1", [reply], stopped) is True
    late = [ChatMessage("assistant", "Hello there, the full late reply")]
    assert store.turns.record_turn_end("t1", late, COMPLETED) is False
    assert store.turns.close_turn("t1", COMPLETED) is False
    turn = store.turns.get_turn("t1")
    assert turn is not None
    assert (turn.status, turn.exit_reason) == ("interrupted", "interrupted_by_user")
    assert (turn.stop_issuer, turn.stop_surface, turn.stop_reason) == (
        "user",
        "desk.key",
        "stopped by you",
    )
    assert (turn.stop_closed_ms, turn.stop_exited_ms, turn.children_ended) == (3.5, 9.0, 2)
    assert turn.ended_at == clock.now
    assert [(m.content, m.partial) for m in store.transcript.all_messages("s1")] == [
        ("hello", False),
        ("Hel", True),
    ]
    with pytest.raises(StoreNotFound):
        store.turns.close_turn("missing", COMPLETED)


def test_concurrent_closes_book_one_outcome(store: SessionStore) -> None:
    store.sessions.create_session("s1")
    store.turns.start_turn("t1", "s1", "hello")
    barrier = threading.Barrier(8)
    wins: list[str] = []
    lock = threading.Lock()

    def close(n: int) -> None:
        barrier.wait(timeout=10)
        outcome = TurnOutcome(status="failed", exit_reason=f"failed(E{n})")
        if store.turns.record_turn_end("t1", [ChatMessage("assistant", f"reply {n}")], outcome):
            with lock:
                wins.append(f"failed(E{n})")

    threads = [threading.Thread(target=close, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert len(wins) == 1
    turn = store.turns.get_turn("t1")
    assert turn is not None and turn.exit_reason == wins[0]
    assert len(store.transcript.all_messages("s1")) == 2  # the prompt and the one winning reply


def test_outcome_from_a_turn_result(store: SessionStore) -> None:
    stop = StopRequest.by_system(Surface.GATEWAY_SHUTDOWN, "desk is shutting down")
    timings = TurnTimings(started_at=10.0, stop_requested_at=11.0, connection_closed_at=11.004)
    result = TurnResult(
        status="interrupted",
        exit_reason=stop.exit_reason(),
        text="partial te",
        reasoning="hmm",
        messages=[
            ChatMessage("assistant", "", tool_calls=(ToolCall("c1", "shell", "{}"),)),
            ChatMessage("tool", "done", tool_call_id="c1"),
            ChatMessage("assistant", "partial te"),
        ],
        partial=True,
        stop=stop,
        usage=Usage(prompt_tokens=100, completion_tokens=7, total_tokens=107),
        timings=timings,
        children_ended=1,
    )
    outcome = TurnOutcome.from_result(result, stop_exited_ms=12.0)
    assert outcome.children_ended == 1
    assert outcome.stop_issuer == "system"
    assert outcome.stop_surface == "gateway.shutdown"
    assert outcome.stop_closed_ms == pytest.approx(4.0)
    store.sessions.create_session("s1")
    store.turns.start_turn("t1", "s1", "go")
    assert store.turns.record_turn_end("t1", turn_messages(result), outcome)
    rows = store.transcript.all_messages("s1")
    assert [(m.role, m.partial, m.reasoning) for m in rows] == [
        ("user", False, None),
        ("assistant", False, None),
        ("tool", False, None),
        ("assistant", True, "hmm"),
    ]
    turn = store.turns.get_turn("t1")
    assert turn is not None
    assert turn.exit_reason == "interrupted_by_system(gateway.shutdown)"
    assert (turn.prompt_tokens, turn.completion_tokens) == (100, 7)


def test_the_tool_call_a_stop_ended_is_kept_on_its_turn(store: SessionStore) -> None:
    stop = StopRequest.by_user(Surface.DESK_KEY)
    result = TurnResult("interrupted", stop.exit_reason(), "", stop=stop)
    during = TurnResult("interrupted", stop.exit_reason(), "", stop=stop)
    during.stopped_tool = StoppedTool("shell", pid=4321, ended_ms=7.5, signals=("SIGTERM",))
    store.sessions.create_session("s1")
    store.turns.start_turn("t1", "s1", "go")
    store.turns.start_turn("t2", "s1", "again")
    assert store.turns.close_turn("t1", TurnOutcome.from_result(during))
    assert store.turns.close_turn("t2", TurnOutcome.from_result(result))
    one, two = store.turns.get_turn("t1"), store.turns.get_turn("t2")
    assert one is not None and (one.stop_tool, one.stop_tool_pid, one.stop_tool_ended_ms) == (
        "shell",
        4321,
        7.5,
    )
    assert two is not None and (two.stop_tool, two.stop_tool_pid, two.stop_tool_ended_ms) == (
        None,
        None,
        None,
    )


def test_an_outcome_must_be_terminal() -> None:
    with pytest.raises(ValueError):
        TurnOutcome(status="running", exit_reason="completed")
    with pytest.raises(ValueError):
        TurnOutcome(status="completed", exit_reason="")


def test_drafts_only_on_open_turns(store: SessionStore) -> None:
    store.sessions.create_session("s1")
    store.turns.start_turn("t1", "s1", "hello")
    assert store.turns.save_draft("t1", "Hel")
    assert store.turns.get_turn("t1").draft == "Hel"  # type: ignore[union-attr]
    assert store.turns.close_turn("t1", COMPLETED)
    assert store.turns.get_turn("t1").draft is None  # type: ignore[union-attr]
    assert store.turns.save_draft("t1", "Hello") is False
    assert store.turns.save_draft("missing", "x") is False


def test_list_and_open_turns(store: SessionStore, clock: FakeClock) -> None:
    store.sessions.create_session("s1")
    store.turns.start_turn("t1", "s1", "a")
    clock.advance(1)
    store.turns.start_turn("t2", "s1", "b")
    store.turns.close_turn("t1", COMPLETED)
    assert [t.id for t in store.turns.list_turns("s1")] == ["t1", "t2"]
    assert [t.id for t in store.turns.open_turns()] == ["t2"]


def test_a_dead_owners_tool_calls_come_back_with_their_results_or_as_lost(
    store_factory: StoreFactory,
) -> None:
    dead = "otherhost:4242:1"
    listed = SavedCall("c1", "list_dir", '{"path": "."}')
    shell = SavedCall("c2", "shell", '{"command": "sleep 600"}')
    with closing(store_factory(liveness=ScriptedLiveness(dead))) as s:
        s.sessions.create_session("s1")
        s.turns.start_turn("t1", "s1", "look around")
        assert s.turns.save_calls("t1", [listed])  # saved when it starts
        assert s.turns.save_calls("t1", [replace(listed, content="a.txt")])  # and when it ends
        assert s.turns.save_calls("t1", [replace(listed, content="a.txt"), shell])
        s.turns.start_turn("t2", "s1", "closed normally", started_at=1.0)
        assert s.turns.save_calls("t2", [shell])
        s.turns.close_turn("t2", COMPLETED)  # a closed turn keeps its own messages only
        assert s.turns.save_calls("t2", [shell]) is False
    with closing(store_factory(liveness=ScriptedLiveness(alive=lambda _owner: False))) as s:
        turn = s.turns.get_turn("t1")
        assert turn is not None and turn.exit_reason == CRASH_EXIT_REASON and turn.calls is None
        messages = [m for m in s.transcript.all_messages("s1") if m.turn_id == "t1"]
        assert [(m.role, m.content, m.tool_call_id) for m in messages] == [
            ("user", "look around", None),
            ("assistant", "", None),
            ("tool", "a.txt", "c1"),
            ("tool", LOST_RESULT, "c2"),
        ]
        assert [(c.id, c.name, c.arguments) for c in messages[1].tool_calls] == [
            ("c1", "list_dir", '{"path": "."}'),
            ("c2", "shell", '{"command": "sleep 600"}'),
        ]
        assert [m.turn_id for m in s.transcript.all_messages("s1")].count("t2") == 1


def test_a_dead_owners_waiting_call_comes_back_not_run_and_a_childs_calls_stay_on_its_row(
    store_factory: StoreFactory,
) -> None:
    dead = "otherhost:4242:1"
    asking = SavedCall("c1", "shell", '{"command": "rm -r build"}', waiting=True)
    child_call = SavedCall("c9", "shell", '{"command": "sleep 600"}')
    with closing(store_factory(liveness=ScriptedLiveness(dead))) as s:
        s.sessions.create_session("s1")
        s.turns.start_turn("t1", "s1", "clean up")
        assert s.turns.save_calls("t1", [asking])
        s.turns.start_turn("k1", "s1", "a task", record_prompt=False, parent_turn_id="t1")
        assert s.turns.save_calls("k1", [child_call])
    with closing(store_factory(liveness=ScriptedLiveness(alive=lambda _owner: False))) as s:
        messages = [m for m in s.transcript.all_messages("s1") if m.turn_id == "t1"]
        assert [(m.role, m.content, m.tool_call_id) for m in messages][-1] == (
            "tool",
            NOT_ANSWERED,
            "c1",
        )
        child = s.turns.get_turn("k1")
        assert child is not None and child.exit_reason == CRASH_EXIT_REASON
        assert calls_from_json(child.calls) == [child_call]  # not the session's messages
        assert all(m.turn_id != "k1" for m in s.transcript.all_messages("s1"))


def test_recovery_closes_dead_owners_turns_and_keeps_their_drafts(
    store_factory: StoreFactory, clock: FakeClock
) -> None:
    dead = "otherhost:4242:1"
    with closing(store_factory(liveness=ScriptedLiveness(dead))) as s:
        s.sessions.create_session("s1")
        s.turns.start_turn("t1", "s1", "explain")
        s.turns.save_draft("t1", "It works by")
        s.sessions.create_session("s2")
        s.turns.start_turn("t2", "s2", "no reply yet")
    live = "livehost:1:1"
    with closing(store_factory(liveness=ScriptedLiveness(live), recover=False)) as s:
        s.sessions.create_session("s3")
        s.turns.start_turn("t3", "s3", "still running elsewhere")
    alive = {live}
    clock.advance(60)
    with closing(store_factory(liveness=ScriptedLiveness(alive=alive.__contains__))) as s:
        assert [t.id for t in s.turns.open_turns()] == ["t3"]
        t1 = s.turns.get_turn("t1")
        assert t1 is not None
        assert (t1.status, t1.exit_reason, t1.ended_at) == ("failed", CRASH_EXIT_REASON, clock.now)
        assert t1.error is not None and "4242" in t1.error
        assert [(m.role, m.content, m.partial) for m in s.transcript.all_messages("s1")] == [
            ("user", "explain", False),
            ("assistant", "It works by", True),
        ]
        assert len(s.transcript.all_messages("s2")) == 1
        assert s.turns.close_turn("t1", COMPLETED) is False  # a late worker cannot overwrite it
        assert s.turns.recover_open_turns() == []
        assert s.turns.recover_open_turns(include_live=True) == ["t3"]


def test_recovery_leaves_this_process_alone(store_factory: StoreFactory) -> None:
    with closing(store_factory()) as s:
        s.sessions.create_session("s1")
        s.turns.start_turn("t1", "s1", "x")
    with closing(store_factory()) as s:  # same process: the turn is still ours, not crashed
        assert [t.id for t in s.turns.open_turns()] == ["t1"]


def test_a_closed_turn_keeps_its_usage_summed_over_its_requests(store: SessionStore) -> None:
    store.sessions.create_session("s1")
    store.turns.start_turn("t1", "s1", "hello")
    store.turns.start_turn("t2", "s1", "older desk")
    usage = TokenUsage(3, 1_200, 345, 800, 1)
    assert store.turns.close_turn(
        "t1", TurnOutcome("interrupted", "interrupted_by_user", usage=usage)
    )
    assert store.turns.close_turn("t2", COMPLETED)
    turns = {t.id: t for t in store.turns.list_turns("s1")}
    assert turns["t1"].usage == usage and turns["t1"].usage.estimated
    assert turns["t2"].usage is None  # nothing counted: not zero


def test_a_closed_turn_keeps_the_finish_reason_of_its_reply(store: SessionStore) -> None:
    store.sessions.create_session("s1")
    for turn_id, reason in (("cut", "length"), ("whole", "stop"), ("stopped", None)):
        store.turns.start_turn(turn_id, "s1", "p")
        result = TurnResult(
            status="completed", exit_reason="completed", text="r", finish_reason=reason
        )
        assert store.turns.record_turn_end(turn_id, [], TurnOutcome.from_result(result))
    reasons = {t.id: t.finish_reason for t in store.turns.list_turns("s1")}
    assert reasons == {"cut": "length", "whole": "stop", "stopped": None}


def test_recovery_keeps_a_dead_childs_draft_as_its_reply_not_the_sessions_message(
    store_factory: StoreFactory,
) -> None:
    with closing(store_factory(liveness=ScriptedLiveness("otherhost:4242:1"))) as s:
        s.sessions.create_session("s1")
        s.turns.start_turn("t1", "s1", "research it")
        s.turns.start_turn("k1", "s1", "a task", record_prompt=False, parent_turn_id="t1")
        assert s.turns.save_draft("k1", "The child found")
    with closing(store_factory(liveness=ScriptedLiveness(alive=lambda _owner: False))) as s:
        child = s.turns.get_turn("k1")
        assert child is not None and child.exit_reason == CRASH_EXIT_REASON
        assert (child.reply, child.draft) == ("The child found", None)
        assert all(m.turn_id != "k1" for m in s.transcript.all_messages("s1"))
