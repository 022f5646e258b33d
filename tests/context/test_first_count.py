"""A session's first ``context.window`` is calibrated by the server's own count: when the server
answers, the gateway has it count a new session's first request (system prompt and tools), and
sessions made after start from it; one made while the count is being taken is announced right
after it, calibrated too (tui_gateway.turns.context_window)."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from agent.provider.client import ProviderConfig
from agent.provider.tokenize import ServerTokens
from agent.provider.types import ChatMessage
from contract.events import ContextWindowKnown, Payload
from demo_model import DemoModelServer
from tests.support import running_demo
from tui_gateway.sessions.state import Session
from tui_gateway.turns.context_window import SessionWindows
from tui_gateway.turns.server_counts import ServerCounts

SYSTEM = [ChatMessage("system", "You are a careful assistant. " * 40)]


@pytest.fixture
def server() -> Iterator[DemoModelServer]:
    with running_demo(0, n_ctx=4096) as served:
        yield served


class Published:
    """What the windows publish, by session."""

    def __init__(self) -> None:
        self.lock = threading.Condition()
        self.counts: dict[str, list[ContextWindowKnown]] = {}

    def __call__(self, session: Session, payload: Payload) -> None:
        if isinstance(payload, ContextWindowKnown):
            with self.lock:
                self.counts.setdefault(session.session_id, []).append(payload)
                self.lock.notify_all()

    def wait(self, session_id: str, count: int, timeout_s: float = 30.0) -> bool:
        """True once ``count`` figures were published for ``session_id``."""
        with self.lock:
            return self.lock.wait_for(
                lambda: len(self.counts.get(session_id, [])) >= count, timeout_s
            )

    def of(self, session_id: str) -> list[ContextWindowKnown]:
        with self.lock:
            return list(self.counts.get(session_id, []))


def tokens_of(counted: ServerTokens | None) -> int:
    """The tokens of a count the server gave."""
    assert counted is not None and counted.tokens > 0
    return counted.tokens


def new_session(name: str) -> Session:
    return Session(session_id=name, title=name, model="demo", history=list(SYSTEM))


def test_a_session_made_while_the_first_count_is_taken_is_announced_calibrated(
    server: DemoModelServer,
) -> None:
    provider = ProviderConfig(base_url=server.base_url, model="demo")
    counted = ServerCounts()(provider, SYSTEM, [])
    assert counted is not None and counted.tokens > 0
    exact = counted.tokens
    asked, release = threading.Event(), threading.Event()

    def held_count(
        p: ProviderConfig, messages: Sequence[ChatMessage], tools: Sequence[dict[str, Any]]
    ) -> ServerTokens | None:
        asked.set()
        assert release.wait(30.0)
        return ServerCounts()(p, messages, tools)

    published = Published()
    windows = SessionWindows(None, published, count=held_count, first=lambda: list(SYSTEM))
    answering = threading.Thread(target=windows.server_answers, args=(provider, []))
    answering.start()
    try:
        assert asked.wait(30.0)
        early = new_session("early")  # made while the server counts: the window is known
        windows.announce(early, provider)
        assert published.of("early") == []  # not a guess first, the count after
    finally:
        release.set()
        answering.join(30.0)
    (announced,) = published.of("early")
    assert announced.measured and announced.used_tokens == exact

    later = new_session("later")
    windows.announce(later, provider)
    (announced,) = published.of("later")
    assert announced.measured and announced.used_tokens == exact


def test_without_the_first_count_a_new_session_is_counted_at_the_default_ratio(
    server: DemoModelServer,
) -> None:
    provider = ProviderConfig(base_url=server.base_url, model="demo")
    exact = tokens_of(ServerCounts()(provider, SYSTEM, []))
    published = Published()
    windows = SessionWindows(None, published, count=None, first=lambda: list(SYSTEM))
    windows.server_answers(provider, [])
    windows.announce(new_session("s"), provider)
    (announced,) = published.of("s")
    assert not announced.measured and announced.used_tokens != exact


def resumed_session(name: str) -> Session:
    """A session resumed with a prose history of its own and no server count saved."""
    prose = "The river rose over the old stone bridge while the town slept. " * 30
    history = [*SYSTEM]
    for i in range(6):
        history += [ChatMessage("user", f"{i}: {prose}"), ChatMessage("assistant", prose)]
    return Session(session_id=name, title=name, model="demo", history=history)


def test_a_resumed_session_is_counted_on_its_own_history_not_the_first_requests(
    server: DemoModelServer,
) -> None:
    # A first request's count (the system prompt, the tools' JSON) has another ratio than a
    # prose history: a resumed session calibrated from it showed a third too few tokens, and
    # its compression kept too much
    provider = ProviderConfig(base_url=server.base_url, model="demo")
    resumed = resumed_session("resumed")
    exact = tokens_of(ServerCounts()(provider, resumed.history, []))
    published = Published()
    windows = SessionWindows(None, published, count="server", first=lambda: list(SYSTEM))
    try:
        windows.server_answers(provider, [resumed])  # the server answers after the resume
        announced = published.of("resumed")[-1]
        assert announced.measured and announced.used_tokens == exact

        later = resumed_session("later")  # resumed once the first request was counted
        windows.announce(later, provider)  # the estimate at once, the server's count after
        assert published.wait("later", 2)
        estimate, counted = published.of("later")
        assert not estimate.measured  # not another request's ratio
        assert counted.measured and counted.used_tokens == exact
    finally:
        windows.close()
    assert not [t for t in threading.enumerate() if t.name == "desk-count"]
