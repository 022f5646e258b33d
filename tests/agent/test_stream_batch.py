"""Deltas of a fast stream are joined before they leave the turn; a slow stream is never held."""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from agent.agent import Agent
from agent.events import AgentEvent, TextDelta
from agent.provider.client import ChatClient, ProviderConfig
from agent.provider.types import StreamDelta
from agent.stream_batch import DeltaBatcher
from demo_model.server import DemoModelServer


class FakeClock:
    """Seconds that move only when told to."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def run_on_loop(body: object) -> None:
    asyncio.run(body)  # type: ignore[arg-type]


def test_the_first_piece_and_every_piece_of_a_slow_stream_go_out_at_once() -> None:
    async def body() -> None:
        clock, out = FakeClock(), []
        batch = DeltaBatcher(out.append, asyncio.get_running_loop(), interval_s=0.01, clock=clock)
        for word in ["one ", "two ", "three"]:
            batch.add(StreamDelta(content=word))
            assert out[-1].content == word  # nothing held back
            clock.now += 0.02  # slower than the interval
        assert [d.pieces for d in out] == [1, 1, 1]

    run_on_loop(body())


def test_pieces_arriving_within_the_interval_are_joined_and_flushed_by_the_timer() -> None:
    async def body() -> None:
        clock, out = FakeClock(), []
        flushed = asyncio.Event()

        def emit(delta: StreamDelta) -> None:
            out.append(delta)
            if len(out) == 2:
                flushed.set()

        batch = DeltaBatcher(emit, asyncio.get_running_loop(), interval_s=0.01, clock=clock)
        batch.add(StreamDelta(content="a"))  # out at once
        for piece in ["b", "c", "d"]:
            batch.add(StreamDelta(content=piece, reasoning=piece.upper()))
        assert len(out) == 1  # held: they came within 10 ms of the first
        await asyncio.wait_for(flushed.wait(), 5.0)  # the loop's timer lets them out
        assert out[1] == StreamDelta(content="bcd", reasoning="BCD", pieces=3)

    run_on_loop(body())


def test_flush_at_the_end_lets_out_what_is_held_and_cancels_the_timer() -> None:
    async def body() -> None:
        clock, out = FakeClock(), []
        batch = DeltaBatcher(out.append, asyncio.get_running_loop(), interval_s=60.0, clock=clock)
        batch.add(StreamDelta(content="x"))
        batch.add(StreamDelta(content="y"))
        batch.flush()
        batch.flush()  # nothing left: emits nothing
        assert [d.content for d in out] == ["x", "y"]

    run_on_loop(body())


@settings(max_examples=60, deadline=None)
@given(
    steps=st.lists(
        st.tuples(st.text(min_size=1, max_size=5), st.floats(min_value=0.0, max_value=0.03)),
        max_size=40,
    )
)
def test_joined_deltas_keep_every_character_in_order(steps: list[tuple[str, float]]) -> None:
    async def body() -> None:
        clock, out = FakeClock(), []
        batch = DeltaBatcher(out.append, asyncio.get_running_loop(), interval_s=0.01, clock=clock)
        for text, gap in steps:
            batch.add(StreamDelta(content=text))
            clock.now += gap
            await asyncio.sleep(0)  # a timer that is due may fire here
        batch.flush()
        assert "".join(d.content for d in out) == "".join(text for text, _gap in steps)
        assert sum(d.pieces for d in out) == len(steps)

    run_on_loop(body())


def test_a_fast_stream_reaches_the_listener_in_fewer_events_with_nothing_lost(
    demo_server: DemoModelServer, provider: ProviderConfig
) -> None:
    demo_server.configure(tokens_per_second=0)  # as fast as the server can send
    events: list[AgentEvent] = []
    agent = Agent(ChatClient(provider), listener=events.append)
    result = agent.run_conversation([], "Tell me about stopping streams")
    deltas = [e for e in events if isinstance(e, TextDelta)]
    assert result.status == "completed"
    assert "".join(d.text for d in deltas) == result.text
    assert result.usage is not None
    assert sum(d.pieces for d in deltas) == result.usage.completion_tokens
    assert len(deltas) < result.usage.completion_tokens


def test_with_no_interval_every_piece_is_its_own_event(
    demo_server: DemoModelServer, provider: ProviderConfig
) -> None:
    demo_server.configure(tokens_per_second=0)
    events: list[AgentEvent] = []
    agent = Agent(ChatClient(provider), listener=events.append, delta_interval_s=0)
    result = agent.run_conversation([], "Tell me about stopping streams")
    deltas = [e for e in events if isinstance(e, TextDelta)]
    assert result.usage is not None
    assert len(deltas) == result.usage.completion_tokens
    assert all(d.pieces == 1 for d in deltas)
