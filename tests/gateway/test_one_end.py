"""Every turn ends exactly once, whichever way it ends: one ``message.complete`` on the event
stream (one ``child.completed`` for a child agent, one ``prompt.dropped`` for a queued prompt
that never ran), and in the store one closed row with its reply saved once.

The turns of one session take every end path in turn: completed, a child agent's, stopped by the
person, failed by the server (HTTP 500), and stopped by the system when the gateway shuts down
(the running turn, and a prompt queued behind it).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from agent.provider.client import ProviderConfig
from agent.stops import StopRequest, Surface
from agent.store import SqliteStore
from contract.events import ChildCompleted, MessageComplete, MessageDelta, PromptDropped
from demo_model.server import DemoModelServer
from tests.support import EventLog
from tui_gateway.gateway import Gateway, GatewayConfig


def ends_on_the_stream(log: EventLog) -> Counter[str]:
    """How many end events each turn got: ``message.complete``, ``child.completed`` or
    ``prompt.dropped``."""
    ends: Counter[str] = Counter()
    for complete in log.of_type(MessageComplete):
        ends[complete.turn_id] += 1
    for child in log.of_type(ChildCompleted):
        ends[child.turn_id] += 1
    for dropped in log.of_type(PromptDropped):
        ends[dropped.turn_id] += 1
    return ends


def streaming(log: EventLog, turn_id: str) -> None:
    assert log.wait_for(
        lambda ev: any(
            isinstance(e.payload, MessageDelta) and e.payload.turn_id == turn_id for e in ev
        ),
        10,
    )


def test_every_turn_ends_exactly_once_on_the_stream_and_in_the_store(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    db = tmp_path / "desk.db"
    demo_server.configure(slots=2)
    gateway = Gateway(
        GatewayConfig(provider=provider, approvals=False, cwd=tmp_path), store=SqliteStore(db)
    )
    log = EventLog()
    gateway.subscribe(log)
    expected: dict[str, str] = {}
    shutdown_report = None
    try:
        session = gateway.session_create()

        done = gateway.prompt_submit(session, "reply with exactly: finished").turn_id
        assert log.complete(done).exit_reason == "completed"
        expected[done] = "completed"

        parent = gateway.prompt_submit(session, "delegate: reply with exactly: from the child")
        assert log.complete(parent.turn_id, timeout=15).exit_reason == "completed"
        expected[parent.turn_id] = "completed"
        (child,) = log.of_type(ChildCompleted)
        expected[child.turn_id] = "completed"

        by_user = gateway.prompt_submit(session, "a long one [demo tps=20]").turn_id
        streaming(log, by_user)
        gateway.session_interrupt(session, StopRequest.by_user(Surface.DESK_KEY))
        assert log.complete(by_user).exit_reason == "interrupted_by_user"
        expected[by_user] = "interrupted_by_user"

        demo_server.configure(fault="http:500")
        failed = gateway.prompt_submit(session, "this one fails").turn_id
        assert log.complete(failed).exit_reason == "failed(ServerError)"
        expected[failed] = "failed(ServerError)"
        demo_server.configure(fault=None)

        by_system = gateway.prompt_submit(session, "another long one [demo tps=20]").turn_id
        queued = gateway.prompt_submit(session, "reply with exactly: never sent")
        assert queued.queued
        streaming(log, by_system)
        expected[by_system] = "interrupted_by_system(gateway.shutdown)"
    finally:
        shutdown_report = gateway.shutdown(timeout_s=10)
    assert shutdown_report.threads_left == []
    complete = {c.turn_id: c for c in log.of_type(MessageComplete)}
    assert {t: complete[t].exit_reason for t in expected if t != child.turn_id} == {
        t: reason for t, reason in expected.items() if t != child.turn_id
    }
    assert [d.turn_id for d in log.of_type(PromptDropped)] == [queued.turn_id]

    ends = ends_on_the_stream(log)
    assert ends == Counter({turn_id: 1 for turn_id in [*expected, queued.turn_id]})

    with SqliteStore(db) as store:
        rows = {row.id: row for row in store.turns.list_turns(session)}
        assert set(expected) <= set(rows)
        for turn_id, reason in expected.items():
            assert rows[turn_id].ended_at is not None, turn_id
            assert rows[turn_id].exit_reason == reason, turn_id
        assert store.turns.open_turns() == []
        per_turn = Counter(  # a reply of the turn's own: not a tool call's
            (m.turn_id, m.role) for m in store.transcript.all_messages(session) if not m.tool_calls
        )
        for turn_id in expected.keys() - {child.turn_id}:
            assert per_turn[(turn_id, "user")] == 1, turn_id
            assert per_turn[(turn_id, "assistant")] <= 1, turn_id
        assert per_turn[(done, "assistant")] == per_turn[(by_user, "assistant")] == 1
        assert per_turn[(parent.turn_id, "assistant")] == per_turn[(parent.turn_id, "tool")] == 1
        assert per_turn[(by_system, "assistant")] == 1  # its partial reply, saved once
        assert per_turn[(queued.turn_id, "user")] == 1  # saved as not sent, once
        assert per_turn[(queued.turn_id, "assistant")] == 0
