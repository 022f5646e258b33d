"""Nothing of a turn outlives it, and a stop is booked as the stop however it surfaces.

After a turn (completed or stopped) this process holds no connection to the model server: the
per-turn HTTP client was closed. A stop whose socket shutdown reaches the stream before the
task's cancel does (the read fails as an early close) is still booked as that stop, never as
``failed(EarlyClose)``.
"""

from __future__ import annotations

import psutil
import pytest

from agent.agent import Agent
from agent.provider.client import ChatClient, ProviderConfig
from agent.stops import StopRequest, Surface
from contract.events import MessageDelta
from demo_model.server import DemoModelServer
from tests.support import EventLog
from tui_gateway.gateway import AgentSetup, Gateway, GatewayConfig


def connections_to(port: int) -> list[object]:
    """This process's TCP connections to ``port`` that are still open."""
    return [
        c
        for c in psutil.Process().net_connections(kind="tcp")
        if c.raddr and c.raddr.port == port and c.status != psutil.CONN_TIME_WAIT
    ]


@pytest.mark.parametrize("stream", [True, False])
def test_no_connection_to_the_model_server_is_left_after_a_turn(
    stream: bool, provider: ProviderConfig, demo_server: DemoModelServer
) -> None:
    gateway = Gateway(GatewayConfig(provider=provider, stream=stream))
    log = EventLog()
    gateway.subscribe(log)
    port = int(provider.base_url.split(":")[-1].split("/")[0])
    try:
        session = gateway.session_create()
        done = log.complete(gateway.prompt_submit(session, "reply with exactly: one").turn_id)
        assert done.status == "completed"
        assert connections_to(port) == []
        demo_server.configure(tokens_per_second=30.0)
        turn = gateway.prompt_submit(session, "a long one").turn_id
        assert demo_server.records.wait_for(
            lambda rs: len(rs) == 2 and rs[-1].tokens_generated > 0, 10
        )
        assert connections_to(port) != []  # the turn's own, while the reply is made
        gateway.session_interrupt(session, StopRequest.by_user(Surface.DESK_KEY))
        assert log.complete(turn).status == "interrupted"
        assert connections_to(port) == []
    finally:
        assert gateway.shutdown(timeout_s=5).threads_left == []


class SocketFirstAgent(Agent):
    """An agent whose stop only shuts the socket down (the task's cancel never lands), so the
    stream fails as an early close: the race a loaded machine can produce, made certain."""

    def _cancel_on_loop(self) -> None:
        return None


def test_a_stop_that_surfaces_as_a_socket_error_is_booked_as_the_stop(
    provider: ProviderConfig, demo_server: DemoModelServer
) -> None:
    def socket_first(setup: AgentSetup) -> Agent:
        return SocketFirstAgent(ChatClient(setup.provider), listener=setup.listener)

    demo_server.configure(tokens_per_second=30.0)
    gateway = Gateway(GatewayConfig(provider=provider), agent_factory=socket_first)
    log = EventLog()
    gateway.subscribe(log)
    try:
        session = gateway.session_create()
        turn = gateway.prompt_submit(session, "a long one").turn_id
        assert log.wait_for(lambda ev: any(isinstance(e.payload, MessageDelta) for e in ev))
        gateway.session_interrupt(session, StopRequest.by_user(Surface.DESK_KEY))
        done = log.complete(turn)
        assert (done.status, done.exit_reason) == ("interrupted", "interrupted_by_user")
        assert done.stop is not None and done.stop.surface == "desk.key"
        assert done.text and done.error is None
    finally:
        assert gateway.shutdown(timeout_s=5).threads_left == []
