"""Agent.steer: text reaches the turn at its next model-call boundary, never cutting a stream
or a tool call, and lands in the transcript where it was delivered.

The moment of each steer is fixed with events (a listener that holds the turn's loop at a
chosen delta, a tool that waits on an event), so each case is deterministic; the demo model's
own records show that no request was cut and what the next request carried.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field
from typing import Any

import pytest

from agent.agent import Agent
from agent.context.shape import NO_REPLY, STEER_NOTE
from agent.events import AgentEvent, SteerDelivered, TextDelta, TurnResult
from agent.provider.client import ChatClient, ProviderConfig
from agent.provider.types import ChatMessage
from agent.steering import Steer
from agent.stops import StopRequest, Surface
from agent.tools.base import ToolContext, ToolResult
from agent.tools.registry import ToolRegistry
from demo_model.prompt_text import render_prompt
from demo_model.server import DemoModelServer

PROMPT = "reply with exactly: one two three four five six seven eight nine ten"
WORDS = "one two three four five six seven eight nine ten"


def soft(text: str) -> Steer:
    return Steer(StopRequest.soft(Surface.DESK_KEY, "typed while it ran"), text)


class HoldAt:
    """Holds the turn's loop at the k-th text delta until released; records every event."""

    def __init__(self, k: int) -> None:
        self.k = k
        self.seen = 0
        self.events: list[AgentEvent] = []
        self.reached = threading.Event()
        self.release = threading.Event()

    def __call__(self, event: AgentEvent) -> None:
        self.events.append(event)
        if isinstance(event, TextDelta) and event.text:
            self.seen += 1
            if self.seen == self.k:
                self.reached.set()
                assert self.release.wait(5), "the test never released the turn"


@dataclass(frozen=True)
class WaitingTool:
    """A tool that runs until the test lets it go (so a steer lands while it runs)."""

    started: threading.Event = field(default_factory=threading.Event)
    go: threading.Event = field(default_factory=threading.Event)
    name: str = "wait_here"
    description: str = "waits for the test"
    needs_approval: bool = False

    @property
    def parameters(self) -> dict[str, Any]:
        return {"type": "object", "properties": {}}

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        self.started.set()
        while not self.go.is_set():
            await asyncio.sleep(0.005)
        return ToolResult(content="waited")


def run_in_thread(agent: Agent, prompt: str) -> tuple[threading.Thread, list[TurnResult]]:
    results: list[TurnResult] = []
    thread = threading.Thread(
        target=lambda: results.append(agent.run_conversation([], prompt)), name="test-turn"
    )
    thread.start()
    return thread, results


def test_a_steer_during_a_stream_waits_for_its_end_then_one_more_call_carries_it(
    provider: ProviderConfig, demo_server: DemoModelServer
) -> None:
    hold = HoldAt(3)
    agent = Agent(ChatClient(provider), listener=hold, delta_interval_s=0)
    thread, results = run_in_thread(agent, PROMPT)
    assert hold.reached.wait(5)
    assert agent.steer(soft("reply with exactly: and eleven"))
    hold.release.set()
    thread.join(10)
    (result,) = results
    assert result.status == "completed" and result.undelivered == []
    first, second = demo_server.records.list()
    assert first.outcome == "completed" and first.text == WORDS  # the stream was not cut
    assert [m["role"] for m in second.messages] == ["user", "assistant", "user"]
    assert second.messages[1]["content"] == WORDS
    assert second.messages[2]["content"] == "reply with exactly: and eleven"
    assert [(m.role, m.content) for m in result.messages] == [
        ("assistant", WORDS),
        ("user", "reply with exactly: and eleven"),
        ("assistant", "and eleven"),
    ]
    delivered = [e for e in hold.events if isinstance(e, SteerDelivered)]
    assert [d.text for d in delivered] == ["reply with exactly: and eleven"]
    # delivered after the whole first reply streamed, before the second call's text
    at = hold.events.index(delivered[0])
    before = "".join(e.text for e in hold.events[:at] if isinstance(e, TextDelta))
    assert before == WORDS


def test_a_steer_during_a_tool_call_goes_between_its_result_and_the_next_call(
    provider: ProviderConfig, demo_server: DemoModelServer
) -> None:
    demo_server.configure(strict_template=True)  # Mistral's rule: tool results, then assistant
    tool = WaitingTool()
    agent = Agent(ChatClient(provider), tools=ToolRegistry([tool]), delta_interval_s=0)
    thread, results = run_in_thread(agent, "call tool wait_here with {}")
    assert tool.started.wait(5)
    assert agent.steer(soft("also say hello"))
    tool.go.set()
    thread.join(10)
    (result,) = results
    assert result.status == "completed", result.error
    assert [m.role for m in result.messages] == ["assistant", "tool", "user", "assistant"]
    assert result.messages[1].content == "waited"  # the tool ran to its end
    assert result.messages[2].content == "also say hello"
    _first, second = demo_server.records.list()
    assert second.status == 200
    roles = [m["role"] for m in second.messages]
    assert roles == ["user", "assistant", "tool", "assistant", "user"]
    assert second.messages[3]["content"] == STEER_NOTE


def test_a_steer_before_the_turn_waits_for_the_end_of_its_first_call(
    provider: ProviderConfig, demo_server: DemoModelServer
) -> None:
    agent = Agent(ChatClient(provider), delta_interval_s=0)
    assert agent.steer(soft("reply with exactly: later"))  # e.g. while the turn compresses
    result = agent.run_conversation([], "reply with exactly: first")
    assert [m.content for m in result.messages] == ["first", "reply with exactly: later", "later"]
    first, second = demo_server.records.list()
    assert [m["content"] for m in first.messages] == ["reply with exactly: first"]
    assert second.messages[-1]["content"] == "reply with exactly: later"


def test_after_the_last_boundary_a_steer_is_refused_so_it_becomes_a_prompt(
    provider: ProviderConfig,
) -> None:
    agent = Agent(ChatClient(provider), delta_interval_s=0)
    result = agent.run_conversation([], PROMPT)
    assert result.status == "completed"
    assert not agent.steer(soft("too late"))


def test_a_hard_stop_leaves_a_waiting_steer_undelivered_never_lost(
    provider: ProviderConfig, demo_server: DemoModelServer
) -> None:
    hold = HoldAt(2)
    agent = Agent(ChatClient(provider), listener=hold, delta_interval_s=0)
    thread, results = run_in_thread(agent, PROMPT)
    assert hold.reached.wait(5)
    steer = soft("never sent")
    assert agent.steer(steer)
    agent.interrupt(StopRequest.by_user(Surface.DESK_KEY))
    assert not agent.steer(soft("after the stop"))  # the caller runs that one as a prompt
    hold.release.set()
    thread.join(10)
    (result,) = results
    assert result.status == "interrupted"
    assert result.undelivered == [steer]
    assert len(demo_server.records.list()) == 1
    assert all(m.role != "user" for m in result.messages)


def test_a_steer_with_no_model_call_left_comes_back_undelivered(
    provider: ProviderConfig, demo_server: DemoModelServer
) -> None:
    hold = HoldAt(2)
    agent = Agent(ChatClient(provider), listener=hold, delta_interval_s=0, max_iterations=1)
    thread, results = run_in_thread(agent, PROMPT)
    assert hold.reached.wait(5)
    steer = soft("one call too many")
    assert agent.steer(steer)
    hold.release.set()
    thread.join(10)
    (result,) = results
    assert result.status == "completed" and result.text == WORDS
    assert result.undelivered == [steer]
    assert len(demo_server.records.list()) == 1


def test_a_steer_is_a_soft_interrupt_and_the_system_s_never_reads_as_the_person_s() -> None:
    with pytest.raises(ValueError, match="soft interrupt"):
        Steer(StopRequest.by_user(Surface.DESK_KEY), "hard")
    with pytest.raises(ValueError, match="needs text"):
        soft("  ")
    mine = soft("hello").message()
    assert (mine.role, mine.content) == ("user", "hello")
    system = StopRequest.soft(Surface.DELEGATE_RESULT, "the answer of background child agent c1")
    theirs = Steer(system, "found it").message()
    assert theirs.role == "user" and "not typed by the person" in theirs.content
    assert theirs.content.endswith("found it")


def test_the_request_after_a_steer_and_the_next_turn_s_render_the_same_prefix(
    provider: ProviderConfig, demo_server: DemoModelServer
) -> None:
    """The note between tool results and a steer is the one every later request carries too,
    so the server's prompt cache keeps everything up to the steer."""
    demo_server.configure(strict_template=True)
    tool = WaitingTool()
    agent = Agent(ChatClient(provider), tools=ToolRegistry([tool]), delta_interval_s=0)
    prompt = "call tool wait_here with {}"
    thread, results = run_in_thread(agent, prompt)
    assert tool.started.wait(5)
    assert agent.steer(soft("reply with exactly: steered"))
    tool.go.set()
    thread.join(10)
    (first,) = results
    assert first.status == "completed", first.error
    history = [ChatMessage("user", prompt), *first.messages]
    second = agent.run_conversation(history, "reply with exactly: next")
    assert second.status == "completed", second.error
    _call, after_steer, next_turn = demo_server.records.list()
    assert [r.status for r in (after_steer, next_turn)] == [200, 200]
    before = after_steer.messages
    assert [m["role"] for m in before] == ["user", "assistant", "tool", "assistant", "user"]
    assert before[3]["content"] == STEER_NOTE
    assert next_turn.messages[: len(before)] == before
    assert render_prompt(next_turn.messages).startswith(render_prompt(before))
    assert all(m["content"] != NO_REPLY for m in next_turn.messages)
