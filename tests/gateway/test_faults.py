"""Server faults give one clear line, and the session keeps working afterwards."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from agent.agent import Agent
from agent.provider.client import ChatClient, ProviderConfig
from agent.stops import StopRequest, Surface
from contract.events import TurnState
from demo_model.server import DemoModelServer
from tests.support import EventLog
from tui_gateway.gateway import AgentSetup, Gateway, GatewayConfig


def no_retry_gateway(provider: ProviderConfig) -> tuple[Gateway, EventLog]:
    client = ChatClient(provider)

    def factory(setup: AgentSetup) -> Agent:
        return Agent(client, listener=setup.listener, max_retries=0)

    gateway = Gateway(GatewayConfig(provider=provider), agent_factory=factory)
    log = EventLog()
    gateway.subscribe(log)
    return gateway, log


@pytest.fixture
def gateway_and_log(provider: ProviderConfig) -> Iterator[tuple[Gateway, EventLog]]:
    gateway, log = no_retry_gateway(provider)
    yield gateway, log
    assert gateway.shutdown(timeout_s=5).threads_left == []


@pytest.mark.parametrize(
    ("fault", "exit_reason", "words"),
    [
        ("http:401", "failed(AuthError)", "API key"),
        ("http:403", "failed(AuthError)", "API key"),
        ("http:429", "failed(RateLimited)", "rate limiting"),
        ("http:500", "failed(ServerError)", "failed (500)"),
        ("malformed", "failed(MalformedChunk)", "malformed"),
        ("early_close", "failed(EarlyClose)", "without a finish reason"),
        ("drop", "failed(EarlyClose)", "closed the stream early"),
    ],
)
def test_fault_gives_one_clear_line_and_the_next_prompt_works(
    fault: str,
    exit_reason: str,
    words: str,
    gateway_and_log: tuple[Gateway, EventLog],
    demo_server: DemoModelServer,
) -> None:
    gateway, log = gateway_and_log
    demo_server.configure(fault=fault, fault_after_tokens=3)
    session = gateway.session_create()
    failed = log.complete(gateway.prompt_submit(session, "hello there").turn_id)
    assert failed.status == "failed"
    assert failed.exit_reason == exit_reason
    assert failed.error is not None and words in failed.error
    assert "\n" not in failed.error and "Traceback" not in failed.error
    assert len(failed.error) < 240

    demo_server.configure(fault=None)
    ok = log.complete(gateway.prompt_submit(session, "reply with exactly: back again").turn_id)
    assert ok.status == "completed" and ok.text == "back again"


def test_unknown_model_says_so(demo_server: DemoModelServer) -> None:
    demo_server.configure(strict_model=True)
    provider = ProviderConfig(base_url=demo_server.base_url, model="no-such-model")
    gateway, log = no_retry_gateway(provider)
    try:
        done = log.complete(gateway.prompt_submit(gateway.session_create(), "hi").turn_id)
    finally:
        gateway.shutdown(timeout_s=5)
    assert done.exit_reason == "failed(ModelNotFound)"
    assert done.error is not None and "no-such-model" in done.error


def test_connection_refused_says_so() -> None:
    with socket.socket() as sock:  # a port that was free a moment ago and nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    provider = ProviderConfig(base_url=f"http://127.0.0.1:{port}/v1", model="demo")
    gateway, log = no_retry_gateway(provider)
    try:
        done = log.complete(gateway.prompt_submit(gateway.session_create(), "hi").turn_id)
    finally:
        gateway.shutdown(timeout_s=5)
    assert done.exit_reason == "failed(ConnectFailed)"
    assert done.error is not None and "connection refused" in done.error


@pytest.mark.parametrize("status", [429, 503])
def test_the_wait_before_a_retry_is_the_one_the_server_asked_for(
    status: int, provider: ProviderConfig, demo_server: DemoModelServer
) -> None:
    gateway = Gateway(GatewayConfig(provider=provider))
    log = EventLog()
    gateway.subscribe(log)
    try:
        demo_server.configure(fault=f"http:{status}", retry_after_s=0.25, fault_times=1)
        turn_id = gateway.prompt_submit(gateway.session_create(), "reply with exactly: ok").turn_id
        done = log.complete(turn_id, timeout=10)
        assert done.status == "completed" and done.text == "ok"
        waits = [p.detail for p in log.of_type(TurnState) if p.state == "retrying"]
        assert len(waits) == 1 and waits[0].endswith("retrying in 0.25 s")  # not 2 s
    finally:
        assert gateway.shutdown(timeout_s=5).threads_left == []


def test_rate_limit_is_retried_after_retry_after_and_a_stop_wakes_the_wait(
    provider: ProviderConfig, demo_server: DemoModelServer
) -> None:
    gateway = Gateway(GatewayConfig(provider=provider))
    log = EventLog()
    gateway.subscribe(log)
    try:
        session = gateway.session_create()
        demo_server.configure(fault="http:429")
        first = gateway.prompt_submit(session, "reply with exactly: after the wait").turn_id

        def retries() -> int:
            return sum(1 for p in log.of_type(TurnState) if p.state == "retrying")

        assert log.wait_for(lambda ev: retries() == 1)
        demo_server.configure(fault=None)
        done = log.complete(first, timeout=10)
        assert done.status == "completed" and done.text == "after the wait"

        demo_server.configure(fault="http:503", retry_after_s=30.0)  # a wait far past the test's
        second = gateway.prompt_submit(session, "again").turn_id
        assert log.wait_for(
            lambda ev: len([p for p in log.of_type(TurnState) if p.state == "retrying"]) == 2
        )
        stop = StopRequest.by_user(Surface.DESK_KEY)
        gateway.session_interrupt(session, stop)
        # Retry-After is 30 s: a turn that ends within the deadline was woken by the stop.
        stopped = log.complete(second, timeout=10)
        assert stopped.exit_reason == "interrupted_by_user"
        assert stopped.stop is not None and stopped.stop.exited_ms is not None
        assert len(demo_server.records.list()) == 3, "a retry was sent after the stop"
    finally:
        assert gateway.shutdown(timeout_s=5).threads_left == []
