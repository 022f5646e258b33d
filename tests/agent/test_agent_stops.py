"""Agent.interrupt at any moment: before the turn, at a chosen token, racing completion, after.

The stop moment is fixed with events (a listener that holds the turn's loop at the k-th delta),
so each case is deterministic; a hypothesis test draws k over the whole turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.agent import Agent
from agent.events import AgentEvent, TextDelta, TurnResult
from agent.provider.client import ChatClient, ProviderConfig
from agent.provider.types import ChatMessage
from agent.stops import Issuer, StopRequest, Surface
from agent.tools.base import ToolContext, ToolResult
from agent.tools.registry import ToolRegistry
from demo_model.replies import reply_for
from demo_model.server import DemoModelServer

PROMPT = "reply with exactly: one two three four five six seven eight nine ten"
WORDS = "one two three four five six seven eight nine ten"


class HoldAt:
    """A listener that holds the turn (its event loop) when the k-th delta arrives."""

    def __init__(self, k: int) -> None:
        self.k = k
        self.seen = 0
        self.text = ""
        self.reached = threading.Event()
        self.release = threading.Event()

    def __call__(self, event: AgentEvent) -> None:
        if isinstance(event, TextDelta) and event.text:
            self.seen += 1
            self.text += event.text
            if self.seen == self.k:
                self.reached.set()
                assert self.release.wait(5), "the test never released the turn"


def run_in_thread(agent: Agent, prompt: str) -> tuple[threading.Thread, list[TurnResult]]:
    results: list[TurnResult] = []
    thread = threading.Thread(
        target=lambda: results.append(agent.run_conversation([], prompt)), name="test-turn"
    )
    thread.start()
    return thread, results


def test_stop_before_the_turn_starts_ends_it_on_entry_without_a_request(
    provider: ProviderConfig, demo_server: DemoModelServer
) -> None:
    agent = Agent(ChatClient(provider))
    stop = StopRequest.by_system(Surface.GATEWAY_SHUTDOWN, "quitting")
    agent.interrupt(stop)
    result = agent.run_conversation([], PROMPT)
    assert result.status == "interrupted"
    assert result.exit_reason == "interrupted_by_system(gateway.shutdown)"
    assert result.stop is stop
    assert demo_server.records.list() == []
    assert result.timings is not None
    assert result.timings.stop_to_closed_ms is None  # no connection: none to say it closed


def test_stop_after_the_turn_ended_changes_nothing(provider: ProviderConfig) -> None:
    agent = Agent(ChatClient(provider))
    result = agent.run_conversation([], PROMPT)
    late = StopRequest.by_user(Surface.DESK_KEY)
    agent.interrupt(late)
    assert result.status == "completed"
    assert result.text == WORDS
    assert result.stop is None


def test_only_the_first_hard_stop_is_booked(
    provider: ProviderConfig, demo_server: DemoModelServer
) -> None:
    hold = HoldAt(2)
    agent = Agent(ChatClient(provider), listener=hold, delta_interval_s=0)
    thread, results = run_in_thread(agent, PROMPT)
    assert hold.reached.wait(5)
    first = StopRequest.by_user(Surface.DESK_KEY)
    second = StopRequest.by_system(Surface.GATEWAY_SHUTDOWN, "quitting")
    agent.interrupt(first)
    agent.interrupt(second)
    hold.release.set()
    thread.join(5)
    (result,) = results
    assert result.exit_reason == "interrupted_by_user"
    assert result.stop is first
    assert result.late_stops == [second]
    assert WORDS.startswith(result.text) and result.text.startswith(hold.text[:1])


def test_a_soft_interrupt_is_refused_and_the_turn_goes_on(provider: ProviderConfig) -> None:
    hold = HoldAt(2)
    agent = Agent(ChatClient(provider), listener=hold, delta_interval_s=0)
    thread, results = run_in_thread(agent, PROMPT)
    assert hold.reached.wait(5)
    soft = StopRequest(Issuer.USER, Surface.DESK_KEY, "typed while running", hard=False)
    with pytest.raises(ValueError, match="a soft interrupt is a steer"):
        agent.interrupt(soft)
    assert agent.stop_request is None
    hold.release.set()
    thread.join(5)
    assert results[0].status == "completed"
    assert results[0].text == WORDS


def test_stop_racing_completion_has_exactly_one_consistent_outcome(
    provider: ProviderConfig,
) -> None:
    hold = HoldAt(len(WORDS.split()))  # the last content delta
    agent = Agent(ChatClient(provider), listener=hold, delta_interval_s=0)
    thread, results = run_in_thread(agent, PROMPT)
    assert hold.reached.wait(5)
    stop = StopRequest.by_user(Surface.DESK_KEY)
    agent.interrupt(stop)
    hold.release.set()
    thread.join(5)
    assert not thread.is_alive()
    (result,) = results
    assert_consistent(result, stop)


def assert_consistent(result: TurnResult, stop: StopRequest) -> None:
    if result.status == "completed":
        assert result.text == WORDS
        assert result.stop is None and result.late_stops == [stop]
    else:
        assert result.status == "interrupted"
        assert result.stop is stop and result.exit_reason == "interrupted_by_user"
        assert WORDS.startswith(result.text)
        assert result.partial


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(k=st.integers(min_value=0, max_value=len(WORDS.split()) + 1))
def test_a_stop_at_any_token_gives_one_outcome_and_frees_the_slot(
    k: int, provider: ProviderConfig, demo_server: DemoModelServer
) -> None:
    demo_server.records.clear()
    n = len(WORDS.split())
    hold = HoldAt(k if 1 <= k <= n else 0)
    agent = Agent(ChatClient(provider), listener=hold, delta_interval_s=0)
    stop = StopRequest.by_user(Surface.DESK_KEY)
    if k == 0:
        agent.interrupt(stop)
    thread, results = run_in_thread(agent, PROMPT)
    if 1 <= k <= n:
        assert hold.reached.wait(5)
        agent.interrupt(stop)
        hold.release.set()
    thread.join(5)
    assert not thread.is_alive()
    if k == n + 1:
        agent.interrupt(stop)
    (result,) = results
    if k == 0:
        assert result.status == "interrupted" and result.text == ""
    elif k == n + 1:
        assert result.status == "completed" and result.text == WORDS
    else:
        assert_consistent(result, stop)
        assert result.text.startswith(hold.text[: len(hold.text) - 1].rstrip())
    for record in demo_server.records.list():
        assert demo_server.records.wait_for(
            lambda recs, rid=record.id: (
                next(r for r in recs if r.id == rid).slot_released_at is not None
            ),
            timeout=5,
        )


def test_reply_for_matches_what_the_agent_sends() -> None:
    # Guards the prediction the other tests rely on.
    assert reply_for([ChatMessage(role="user", content=PROMPT).to_wire()]) == WORDS


def test_a_stop_closes_the_connection_even_while_the_turn_loop_is_busy(
    provider: ProviderConfig, demo_server: DemoModelServer
) -> None:
    # The listener holds the turn's own event loop (as a busy UI holding the GIL would delay
    # it): the server must still see the close, because the stopping thread shuts the socket.
    demo_server.configure(tokens_per_second=100.0)
    hold = HoldAt(3)
    agent = Agent(ChatClient(provider), listener=hold, delta_interval_s=0)
    thread, results = run_in_thread(agent, "a long answer please")
    assert hold.reached.wait(5)
    stop = StopRequest.by_user(Surface.DESK_KEY)
    agent.interrupt(stop)
    assert demo_server.records.wait_for(lambda r: r[-1].peer_closed_at is not None, 5)
    assert not hold.release.is_set() and thread.is_alive()  # the loop never ran meanwhile
    hold.release.set()
    thread.join(5)
    (result,) = results
    assert result.exit_reason == "interrupted_by_user"
    assert result.text.startswith(hold.text)


def _hold_loop(agent: Agent) -> threading.Event:
    """Block the running turn's event loop (as a busy frontend holding the CPU would) until
    the returned event is set."""
    release = threading.Event()
    loop = agent._loop  # the turn's own loop, set while it runs
    assert loop is not None
    held = threading.Event()

    def hold() -> None:
        held.set()
        assert release.wait(10), "the test never released the turn"

    loop.call_soon_threadsafe(hold)
    assert held.wait(5)
    return release


@pytest.mark.parametrize("stream", [True, False])
def test_a_stop_while_the_server_reads_the_prompt_closes_the_connection_from_the_stopping_thread(
    provider: ProviderConfig, demo_server: DemoModelServer, stream: bool
) -> None:
    # No header has come yet (the server is still "processing the prompt"), and the turn's
    # loop cannot run: the stopping thread itself must close the socket it connected.
    demo_server.configure(prompt_delay_s=30.0)
    agent = Agent(ChatClient(provider), stream=stream, delta_interval_s=0)
    thread, results = run_in_thread(agent, "a long answer please")
    assert demo_server.records.wait_for(lambda r: bool(r) and r[-1].slot_acquired_at, 5)
    release = _hold_loop(agent)
    agent.interrupt(StopRequest.by_user(Surface.DESK_KEY))
    assert demo_server.records.wait_for(lambda r: r[-1].peer_closed_at is not None, 5)
    assert thread.is_alive()  # the loop never ran meanwhile
    released_at = time.monotonic()
    release.set()
    thread.join(5)
    (result,) = results
    assert result.exit_reason == "interrupted_by_user"
    # the receipt's "connection closed" is when the socket was shut, not when the loop ran
    assert result.timings is not None
    closed_at = result.timings.connection_closed_at
    assert closed_at is not None and closed_at < released_at


@dataclass(frozen=True)
class AnswersItsStop:
    """A tool that answers a stop with a result, as ``delegate`` answers with its stopped
    child's outcome: the cancel is taken, and the call returns normally."""

    started: threading.Event = field(default_factory=threading.Event)
    name: str = "wait_for_the_child"
    description: str = "waits until stopped"
    needs_approval: bool = False

    @property
    def parameters(self) -> dict[str, Any]:
        return {"type": "object", "properties": {}}

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        self.started.set()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.Event().wait()  # only the stop ends it
        return ToolResult(content="the child was stopped")


def test_a_call_that_answers_the_stop_is_the_receipt_s_and_no_request_follows(
    provider: ProviderConfig, demo_server: DemoModelServer
) -> None:
    # The middle agent of a stopped tree sent one more request (its delegate call returned
    # its child's outcome before its own cancel landed): the receipt read 'connection closed'
    # and counted a request the server never saw.
    tool = AnswersItsStop()
    agent = Agent(ChatClient(provider), tools=ToolRegistry([tool]), delta_interval_s=0)
    thread, results = run_in_thread(agent, "call tool wait_for_the_child with {}")
    assert tool.started.wait(10)
    agent.interrupt(StopRequest.by_user(Surface.DESK_KEY))
    thread.join(10)
    (result,) = results
    assert result.status == "interrupted" and result.exit_reason == "interrupted_by_user"
    assert result.stopped_tool is not None and result.stopped_tool.name == tool.name
    assert [m.role for m in result.messages] == ["assistant", "tool"]
    assert result.messages[1].content == "the child was stopped"
    assert len(demo_server.records.list()) == 1
    assert result.usage_total.requests == 1 and result.iterations == 1
