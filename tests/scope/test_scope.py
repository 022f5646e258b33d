"""InterruptScope: binding, registration, cancel, nesting, and a real Agent as a member."""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading

import pytest

from agent.agent import Agent
from agent.events import AgentEvent, TextDelta, TurnResult
from agent.provider.client import ChatClient, ProviderConfig
from agent.scope import InterruptScope, current_scope
from agent.stops import StopRequest
from demo_model.server import DemoModelServer
from tests.scope.kit import TIMEOUT_STOP, USER_STOP, FakeAgent

# -- binding -----------------------------------------------------------------------------------


def test_there_is_no_scope_outside_every_scope() -> None:
    assert current_scope() is None


def test_with_binds_the_scope_for_the_block_only() -> None:
    with InterruptScope("outer") as scope:
        assert current_scope() is scope
    assert current_scope() is None


def test_copied_contexts_and_tasks_see_the_scope_plain_threads_do_not() -> None:
    seen: dict[str, InterruptScope | None] = {}
    with InterruptScope() as scope:
        context = contextvars.copy_context()
        copied = threading.Thread(
            target=context.run, args=(lambda: seen.update(copied=current_scope()),)
        )
        plain = threading.Thread(target=lambda: seen.update(plain=current_scope()))
        copied.start()
        plain.start()
        copied.join(10)
        plain.join(10)

        async def in_task() -> InterruptScope | None:
            return await asyncio.create_task(asyncio.sleep(0, current_scope()))

        seen["task"] = asyncio.run(in_task())  # asyncio.run copies the caller's context
    assert seen == {"copied": scope, "plain": None, "task": scope}


def test_one_scope_can_be_entered_in_several_threads_at_once() -> None:
    scope = InterruptScope()
    entered = threading.Barrier(3)
    results: list[bool] = []

    def worker() -> None:
        with scope:
            entered.wait(10)  # all three are inside at the same time
            results.append(current_scope() is scope)
        results.append(current_scope() is None)

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert results == [True] * 6


def test_leaving_a_scope_that_is_not_current_is_an_error() -> None:
    outer, inner = InterruptScope("outer"), InterruptScope("inner")
    outer.__enter__()
    inner.__enter__()
    with pytest.raises(RuntimeError, match="not the current scope"):
        outer.__exit__(None, None, None)
    inner.__exit__(None, None, None)
    outer.__exit__(None, None, None)
    assert current_scope() is None


# -- register and cancel -----------------------------------------------------------------------


def test_cancel_reaches_every_registered_member_once() -> None:
    scope = InterruptScope()
    fakes = [FakeAgent(str(i)) for i in range(3)]
    for fake in fakes:
        scope.register(fake)
    assert scope.member_count == 3
    assert scope.cancel(TIMEOUT_STOP) is True
    assert [fake.stops for fake in fakes] == [[TIMEOUT_STOP]] * 3
    assert scope.cancelled and scope.stop is TIMEOUT_STOP
    assert scope.member_count == 0


def test_only_the_first_cancel_counts() -> None:
    scope = InterruptScope()
    fake = FakeAgent()
    scope.register(fake)
    assert scope.cancel(USER_STOP) is True
    assert scope.cancel(TIMEOUT_STOP) is False
    assert scope.stop is USER_STOP
    assert fake.stops == [USER_STOP]


def test_a_member_registering_after_the_cancel_is_interrupted_on_entry() -> None:
    scope = InterruptScope()
    scope.cancel(TIMEOUT_STOP)
    late = FakeAgent("late")
    registration = scope.register(late)
    assert late.stops == [TIMEOUT_STOP]
    assert not registration.active
    registration.unregister()  # harmless


def test_an_unregistered_member_is_not_interrupted() -> None:
    scope = InterruptScope()
    gone, staying = FakeAgent("gone"), FakeAgent("staying")
    with scope.register(gone) as registration:
        assert registration.active
    scope.register(staying)
    assert not registration.active
    scope.cancel(USER_STOP)
    assert gone.stops == [] and staying.stops == [USER_STOP]


def test_agents_outside_the_scope_are_untouched() -> None:
    mine, theirs = InterruptScope("mine"), InterruptScope("theirs")
    inside, outside = FakeAgent("inside"), FakeAgent("outside")
    mine.register(inside)
    theirs.register(outside)
    mine.cancel(USER_STOP)
    assert inside.stops == [USER_STOP] and outside.stops == []
    assert not theirs.cancelled


def test_a_soft_stop_is_refused() -> None:
    soft = StopRequest(
        issuer=USER_STOP.issuer, surface=USER_STOP.surface, reason="typing", hard=False
    )
    with pytest.raises(ValueError, match="hard stops"):
        InterruptScope().cancel(soft)


def test_a_failing_member_does_not_shield_the_others(caplog: pytest.LogCaptureFixture) -> None:
    class Broken:
        def interrupt(self, stop: StopRequest) -> None:
            raise RuntimeError("broken member")

    scope = InterruptScope()
    scope.register(Broken())
    after = FakeAgent("after")
    scope.register(after)
    with caplog.at_level(logging.ERROR, logger="agent.scope"):
        scope.cancel(USER_STOP)
    assert after.stops == [USER_STOP]
    assert "broken member" in caplog.text


def test_wait_returns_when_another_thread_cancels() -> None:
    scope = InterruptScope()
    assert scope.wait(0) is False
    canceller = threading.Thread(target=scope.cancel, args=(USER_STOP,))
    canceller.start()
    assert scope.wait(10) is True
    canceller.join(10)


# -- nesting -----------------------------------------------------------------------------------


def test_an_outer_cancel_reaches_agents_in_inner_scopes() -> None:
    with InterruptScope("outer") as outer:
        outer_agent = FakeAgent("outer")
        outer.register(outer_agent)
        with InterruptScope("inner") as inner:
            inner_agent = FakeAgent("inner")
            inner.register(inner_agent)
            outer.cancel(TIMEOUT_STOP)
            assert inner.cancelled and inner.stop is TIMEOUT_STOP
    assert outer_agent.stops == [TIMEOUT_STOP] and inner_agent.stops == [TIMEOUT_STOP]


def test_an_inner_cancel_stays_inside() -> None:
    with InterruptScope("outer") as outer:
        outer_agent = FakeAgent("outer")
        outer.register(outer_agent)
        with InterruptScope("inner") as inner:
            inner.register(FakeAgent("inner"))
            inner.cancel(USER_STOP)
        with InterruptScope("sibling") as sibling:
            pass
    assert outer_agent.stops == [] and not outer.cancelled and not sibling.cancelled


def test_an_inner_scope_entered_after_the_outer_cancel_is_cancelled_on_entry() -> None:
    with InterruptScope("outer") as outer:
        outer.cancel(USER_STOP)
        with InterruptScope("inner") as inner:
            assert inner.cancelled
            late = FakeAgent("late")
            inner.register(late)
    assert late.stops == [USER_STOP]


def test_a_scope_that_was_left_is_no_longer_reached_by_its_outer_scope() -> None:
    with InterruptScope("outer") as outer:
        with InterruptScope("inner") as inner:
            pass
        assert outer.member_count == 0
        outer.cancel(USER_STOP)
    assert not inner.cancelled


# -- a real Agent ------------------------------------------------------------------------------


def test_cancel_books_the_stop_on_a_real_agent_and_its_turn_ends_on_entry() -> None:
    agent = Agent(ChatClient(ProviderConfig(base_url="http://127.0.0.1:9/v1", model="none")))
    scope = InterruptScope()
    with scope.register(agent):
        scope.cancel(TIMEOUT_STOP)
    assert agent.stop_request is TIMEOUT_STOP
    result = agent.run_conversation([], "never sent")  # port 9 is never contacted
    assert result.status == "interrupted"
    assert result.exit_reason == "interrupted_by_system(console.timeout)"
    assert result.stop is TIMEOUT_STOP


def test_a_real_agent_registering_after_the_cancel_is_stopped_on_entry() -> None:
    scope = InterruptScope()
    scope.cancel(USER_STOP)
    agent = Agent(ChatClient(ProviderConfig(base_url="http://127.0.0.1:9/v1", model="none")))
    scope.register(agent)
    assert agent.stop_request is USER_STOP
    assert agent.run_conversation([], "x").exit_reason == "interrupted_by_user"


class HoldAtFirstDelta:
    """A listener that holds the turn's loop at its first text delta until released."""

    def __init__(self) -> None:
        self.reached = threading.Event()
        self.release = threading.Event()

    def __call__(self, event: AgentEvent) -> None:
        if isinstance(event, TextDelta) and event.text and not self.reached.is_set():
            self.reached.set()
            assert self.release.wait(10), "the test never released the turn"


def test_cancel_stops_a_real_turn_in_flight(
    demo_server: DemoModelServer, provider: ProviderConfig
) -> None:
    hold = HoldAtFirstDelta()
    agent = Agent(ChatClient(provider), listener=hold)
    results: list[TurnResult] = []
    with InterruptScope("console") as scope:
        context = contextvars.copy_context()

        def turn() -> None:
            # What Agent will do itself once integrated: register with the current scope.
            found = current_scope()
            assert found is scope
            with found.register(agent):
                results.append(agent.run_conversation([], "reply with exactly: a b c d e f g h"))

        worker = threading.Thread(target=context.run, args=(turn,))
        worker.start()
        assert hold.reached.wait(10)
        scope.cancel(TIMEOUT_STOP)
        hold.release.set()
        worker.join(10)
    assert not worker.is_alive()
    [result] = results
    assert result.status == "interrupted"
    assert result.exit_reason == "interrupted_by_system(console.timeout)"
    assert result.stop is TIMEOUT_STOP
    assert result.timings is not None and result.timings.stop_to_closed_ms is not None
