"""A model server that goes away at run time is handled as one that was away at start: the
state becomes ``unreachable`` (before the turn that found it out is shown as ended), a prompt
is refused with that one line, the server is asked again with the back-off, and prompts go
once it answers. Real demo model servers on loopback, stopped and started on the same port."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agent.provider.client import ProviderConfig
from contract.errors import GatewayError
from contract.events import MessageComplete, MessageDelta
from contract.server_events import ServerState, ServerStatus
from demo_model.server import DemoModelServer
from tests.support import EventLog, running_demo
from tui_gateway.gateway import Gateway, GatewayConfig

DEADLINE_S = 20.0


@pytest.fixture
def watched_demo() -> Iterator[tuple[Gateway, EventLog, DemoModelServer]]:
    """A gateway on a demo model at 20 tokens a second, once the server answered."""
    with running_demo(20.0) as server:
        gateway = Gateway(
            GatewayConfig(provider=ProviderConfig(base_url=server.base_url, model="demo"))
        )
        log = EventLog()
        gateway.subscribe(log)
        gateway.server.check()
        try:
            assert log.wait_for(lambda _e: states(log)[-1:] == [ServerState.READY], DEADLINE_S)
            yield gateway, log, server
        finally:
            assert gateway.shutdown(timeout_s=5.0).threads_left == []


def states(log: EventLog) -> list[ServerState]:
    return [s.state for s in log.of_type(ServerStatus)]


def index_of(log: EventLog, found: object) -> int:
    with log._cond:
        return next(i for i, e in enumerate(log.events) if e.payload is found)


def test_a_server_killed_mid_stream_is_unreachable_until_it_answers_again(
    watched_demo: tuple[Gateway, EventLog, DemoModelServer],
) -> None:
    gateway, log, server = watched_demo
    port = server.port
    session = gateway.session_create()
    turn = gateway.prompt_submit(session, "Tell me about stopping streams").turn_id
    assert log.wait_for(
        lambda _e: any(d.turn_id == turn for d in log.of_type(MessageDelta)), DEADLINE_S
    )
    server.stop()  # the stream is cut short: the turn fails, and the server is asked
    done = log.complete(turn, timeout=DEADLINE_S)
    assert done.status == "failed"
    assert log.wait_for(lambda _e: ServerState.UNREACHABLE in states(log), DEADLINE_S)
    down = next(s for s in log.of_type(ServerStatus) if s.state == ServerState.UNREACHABLE)
    # "reset" when the probe reached the server as it was closing (a busy machine)
    assert down.message in ("connection refused", "connection reset")
    with pytest.raises(GatewayError) as refused:
        gateway.prompt_submit(session, "reply with exactly: not now")
    assert refused.value.message.startswith(f"cannot reach the model server at {server.base_url}: ")
    assert refused.value.message.endswith(("connection refused", "connection reset"))

    with running_demo(0, port=port):
        # nobody asks: the back-off finds it (a refused prompt would ask at once)
        assert log.wait_for(lambda _e: states(log)[-1] == ServerState.READY, DEADLINE_S)
        back = gateway.prompt_submit(session, "reply with exactly: back").turn_id
        assert log.complete(back, timeout=DEADLINE_S).text == "back"


def test_a_prompt_that_cannot_connect_makes_the_server_unreachable_before_its_turn_ends(
    watched_demo: tuple[Gateway, EventLog, DemoModelServer],
) -> None:
    gateway, log, server = watched_demo
    session = gateway.session_create()
    server.stop()  # gone while nothing ran: the gateway still believes it answers
    turn = gateway.prompt_submit(session, "reply with exactly: lost").turn_id
    done = log.complete(turn, timeout=DEADLINE_S)
    assert done.status == "failed" and done.exit_reason == "failed(ConnectFailed)"
    down = next(s for s in log.of_type(ServerStatus) if s.state == ServerState.UNREACHABLE)
    # said before the turn's end, so the prompt typed next is refused and kept, as at start
    assert index_of(log, down) < index_of(log, done)
    complete = [c for c in log.of_type(MessageComplete) if c.turn_id == turn]
    assert len(complete) == 1
    with pytest.raises(GatewayError, match="cannot reach the model server"):
        gateway.prompt_submit(session, "reply with exactly: not now")
