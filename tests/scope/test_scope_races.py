"""Races between register, cancel and unregister: nobody is missed, nobody is stopped twice.

The threads start together from a ``threading.Barrier``; no sleeps pick the interleaving. The
hypothesis tests draw the operations, and a rule-based machine checks the exact single-thread
semantics against a model.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from agent.agent import Agent
from agent.provider.client import ChatClient, ProviderConfig
from agent.scope import InterruptScope, Registration
from agent.stops import StopRequest, Surface
from tests.scope.kit import TIMEOUT_STOP, USER_STOP, FakeAgent

JOIN_S = 10.0


def run_together(*targets: Callable[[], None], names: list[str] | None = None) -> None:
    """Run each target on its own thread, released at the same moment by a barrier."""
    barrier = threading.Barrier(len(targets))
    errors: list[BaseException] = []

    def wrap(target: Callable[[], None]) -> Callable[[], None]:
        def body() -> None:
            try:
                barrier.wait(JOIN_S)
                target()
            except BaseException as exc:  # surface thread failures in the test
                errors.append(exc)

        return body

    threads = [
        threading.Thread(target=wrap(t), name=names[i] if names else None)
        for i, t in enumerate(targets)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(JOIN_S)
    assert not any(thread.is_alive() for thread in threads), "a racing thread hung"
    assert not errors, errors


def test_register_racing_cancel_interrupts_exactly_once() -> None:
    delivered_by: dict[str, int] = {"registering": 0, "cancelling": 0}
    for i in range(300):
        scope = InterruptScope()
        fake = FakeAgent()
        register = lambda: scope.register(fake)  # noqa: B023, E731
        cancel = lambda: scope.cancel(USER_STOP)  # noqa: B023, E731
        # The last thread to reach the barrier runs on at once: alternate which one it is,
        # so both orders inside the scope's lock are exercised.
        if i % 2:
            run_together(register, cancel, names=["registering", "cancelling"])
        else:
            run_together(cancel, register, names=["cancelling", "registering"])
        assert fake.stops == [USER_STOP]
        # On the registering thread: cancelled on entry; on the cancelling one: by the snapshot.
        delivered_by[fake.threads[0]] += 1
        assert scope.member_count == 0
    assert delivered_by["registering"] > 0 and delivered_by["cancelling"] > 0, delivered_by


def test_a_real_agent_racing_a_cancel_books_the_stop_once() -> None:
    client = ChatClient(ProviderConfig(base_url="http://127.0.0.1:9/v1", model="none"))
    for i in range(100):
        scope = InterruptScope()
        agent = Agent(client)
        register = lambda: scope.register(agent)  # noqa: B023, E731
        cancel = lambda: scope.cancel(TIMEOUT_STOP)  # noqa: B023, E731
        run_together(*((register, cancel) if i % 2 else (cancel, register)))
        assert agent.stop_request is TIMEOUT_STOP
        assert agent.run_conversation([], "x").late_stops == []  # delivered once, not twice


def test_many_registrations_racing_two_cancels() -> None:
    scope = InterruptScope()
    fakes = [FakeAgent(str(i)) for i in range(40)]
    run_together(
        *[functools.partial(scope.register, fake) for fake in fakes],
        lambda: scope.cancel(USER_STOP),
        lambda: scope.cancel(TIMEOUT_STOP),
    )
    assert scope.stop in (USER_STOP, TIMEOUT_STOP)
    assert all(fake.stops == [scope.stop] for fake in fakes), fakes


@dataclass(frozen=True)
class Op:
    """One step of a thread's script: register/unregister a fake it owns, or cancel."""

    kind: str  # "register", "unregister" or "cancel"
    fake: int = 0


STOPS = [
    StopRequest.by_user(Surface.DESK_KEY),
    StopRequest.by_system(Surface.GATEWAY_SHUTDOWN, "quitting"),
    StopRequest.by_system(Surface.CONSOLE_TIMEOUT, "took too long"),
]

scripts = st.lists(
    st.lists(
        st.one_of(
            st.builds(Op, st.just("register"), st.integers(0, 2)),
            st.builds(Op, st.just("unregister"), st.integers(0, 2)),
            st.builds(Op, st.just("cancel")),
        ),
        max_size=8,
    ),
    min_size=2,
    max_size=4,
)


@settings(max_examples=60, deadline=None)
@given(scripts)
def test_interleaved_register_cancel_unregister_across_threads(script: list[list[Op]]) -> None:
    scope = InterruptScope()
    # Each thread owns its fakes, so its own register/unregister order is sequential.
    fakes = [[FakeAgent(f"t{t}f{f}") for f in range(3)] for t in range(len(script))]
    registrations: dict[tuple[int, int], int] = {}
    still_registered: set[tuple[int, int]] = set()
    cancels: list[StopRequest] = []

    def thread_body(t: int) -> Callable[[], None]:
        def body() -> None:
            held: dict[int, Registration] = {}
            for i, op in enumerate(script[t]):
                if op.kind == "register" and op.fake not in held:
                    held[op.fake] = scope.register(fakes[t][op.fake])
                    key = (t, op.fake)
                    registrations[key] = registrations.get(key, 0) + 1
                elif op.kind == "unregister" and op.fake in held:
                    held.pop(op.fake).unregister()
                elif op.kind == "cancel":
                    stop = STOPS[(t + i) % len(STOPS)]
                    cancels.append(stop)
                    scope.cancel(stop)
            still_registered.update((t, f) for f in held)

        return body

    run_together(*[thread_body(t) for t in range(len(script))])

    for t, row in enumerate(fakes):
        for f, fake in enumerate(row):
            # At most one stop per registration (an agent registers once per turn), only
            # ever the scope's first stop, and none without a registration.
            made = registrations.get((t, f), 0)
            assert fake.count <= made, fake
            assert all(stop is scope.stop for stop in fake.stops)
            # Registered once and still registered when a cancel happened: reached once.
            if cancels and made == 1 and (t, f) in still_registered:
                assert fake.count == 1, fake
    assert scope.cancelled == bool(cancels)
    if cancels:
        assert scope.stop in cancels
        assert scope.member_count == 0


class ScopeModel(RuleBasedStateMachine):
    """Single-thread semantics, checked against a plain model after every step."""

    def __init__(self) -> None:
        super().__init__()
        self.scope = InterruptScope()
        self.fakes = [FakeAgent(str(i)) for i in range(4)]
        self.held: dict[int, Registration] = {}
        self.expected = [0, 0, 0, 0]
        self.first: StopRequest | None = None

    @rule(i=st.integers(0, 3))
    def register(self, i: int) -> None:
        if i in self.held:
            return
        self.held[i] = self.scope.register(self.fakes[i])
        if self.first is not None:
            self.expected[i] += 1  # cancelled on entry
            assert not self.held[i].active

    @precondition(lambda self: bool(self.held))
    @rule(data=st.data())
    def unregister(self, data: st.DataObject) -> None:
        i = data.draw(st.sampled_from(sorted(self.held)))
        self.held.pop(i).unregister()

    @rule(which=st.integers(0, len(STOPS) - 1))
    def cancel(self, which: int) -> None:
        members = [i for i, registration in self.held.items() if registration.active]
        first = self.scope.cancel(STOPS[which])
        assert first == (self.first is None)
        if first:
            self.first = STOPS[which]
            for i in members:
                self.expected[i] += 1

    @invariant()
    def matches_the_model(self) -> None:
        assert [fake.count for fake in self.fakes] == self.expected
        assert self.scope.stop is self.first
        assert all(stop is self.first for fake in self.fakes for stop in fake.stops)


TestScopeModel = ScopeModel.TestCase
TestScopeModel.settings = settings(max_examples=50, stateful_step_count=20, deadline=None)
