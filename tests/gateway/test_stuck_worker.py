"""A worker that outlives the shutdown bound: its turn is booked by the stop, once, for good.

The agent here is deaf to stops (as code stuck in a C call would be): the shutdown's bound
passes, the booking office books the turn as ``interrupted_by_system(gateway.shutdown)`` in
memory and in the store, and the worker's late result changes neither.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

from agent.agent import Agent
from agent.events import TextDelta, TurnResult
from agent.outcome import ExitReason, TurnStatus
from agent.provider.client import ChatClient, ProviderConfig
from agent.provider.types import ChatMessage
from agent.store import SqliteStore
from tui_gateway.gateway import AgentSetup, Gateway, GatewayConfig
from tui_gateway.stops.booking import ABANDONED


class DeafAgent(Agent):
    """Runs no request: streams ``shown``, waits for the test, then returns a completed reply,
    stops or not."""

    def __init__(
        self,
        setup: AgentSetup,
        entered: threading.Event,
        go: threading.Event,
        shown: tuple[str, ...] = (),
    ) -> None:
        super().__init__(ChatClient(setup.provider), listener=setup.listener)
        self.entered = entered
        self.go = go
        self.shown = shown

    def run_conversation(
        self, history: Sequence[ChatMessage], user_message: str | None = None
    ) -> TurnResult:
        for piece in self.shown:
            self.listener(TextDelta(piece))
        self.entered.set()
        assert self.go.wait(10), "the test never let the worker go"
        reply = ChatMessage(role="assistant", content="late")
        return TurnResult(TurnStatus.COMPLETED, ExitReason.completed(), "late", messages=[reply])


def test_a_late_result_never_overwrites_the_outcome_the_shutdown_booked(
    provider: ProviderConfig, tmp_path: Path
) -> None:
    entered, go = threading.Event(), threading.Event()

    def deaf(setup: AgentSetup) -> Agent:
        return DeafAgent(setup, entered, go)

    db = tmp_path / "desk.db"
    gateway = Gateway(GatewayConfig(provider=provider), agent_factory=deaf, store=SqliteStore(db))
    session = gateway.session_create()
    turn_id = gateway.prompt_submit(session, "hold on").turn_id
    assert entered.wait(5)
    report = gateway.shutdown(timeout_s=0.2)
    try:
        assert report.turns_stopped == 1 and len(report.threads_left) == 1
        booked = gateway.turn(session, turn_id).result
        assert booked is not None and booked.status == "interrupted"
        assert booked.exit_reason == "interrupted_by_system(gateway.shutdown)"
        assert booked.error == ABANDONED
    finally:
        go.set()
        for thread in gateway.worker_threads():
            thread.join(5)
    assert gateway.worker_threads() == []
    assert gateway.turn(session, turn_id).result is booked  # the late "completed" lost
    assert gateway.history(session) == [ChatMessage(role="user", content="hold on")]
    again = Gateway(GatewayConfig(provider=provider), store=SqliteStore(db))
    try:
        transcript = again.session_resume(session).transcript
        assert [(e.role, e.content) for e in transcript] == [("user", "hold on")]
        assert transcript[-1].note == "stopped by the system: desk is shutting down"
    finally:
        assert again.shutdown(timeout_s=5).threads_left == []


def test_a_stuck_worker_keeps_the_reply_it_had_streamed(
    provider: ProviderConfig, tmp_path: Path
) -> None:
    entered, go = threading.Event(), threading.Event()
    shown = ("The partial ", "reply the person ", "saw.")

    def deaf(setup: AgentSetup) -> Agent:
        return DeafAgent(setup, entered, go, shown)

    db = tmp_path / "desk.db"
    gateway = Gateway(GatewayConfig(provider=provider), agent_factory=deaf, store=SqliteStore(db))
    session = gateway.session_create()
    turn_id = gateway.prompt_submit(session, "hold on").turn_id
    assert entered.wait(5)
    report = gateway.shutdown(timeout_s=0.2)
    go.set()
    for thread in gateway.worker_threads():
        thread.join(5)
    booked = gateway.turn(session, turn_id).result
    assert len(report.threads_left) == 1 and booked is not None
    assert booked.exit_reason == "interrupted_by_system(gateway.shutdown)"
    assert booked.text == "".join(shown) and booked.error == ABANDONED
    assert gateway.history(session)[-1] == ChatMessage(role="assistant", content="".join(shown))
    with SqliteStore(db) as check:
        row = check.turns.get_turn(turn_id)
        assert row is not None and not row.is_open and row.stop_surface == "gateway.shutdown"
        reply = check.transcript.active_messages(session)[-1]
        assert (reply.role, reply.content, reply.partial) == ("assistant", "".join(shown), True)
