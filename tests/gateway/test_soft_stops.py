"""A soft stop (``hard=False``) is a steer: every method that only stops refuses one.

The gateway answers it with a ``GatewayError`` (code -32602, one line naming ``prompt.steer``),
books nothing, and the running turn goes on to its end as if nothing was sent.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agent.provider.client import ProviderConfig
from agent.stops import Issuer, StopRequest, Surface
from contract.events import MessageDelta, TurnState
from demo_model.server import DemoModelServer
from tests.support import EventLog
from tui_gateway.gateway import Gateway, GatewayConfig, GatewayError

SOFT = StopRequest(Issuer.USER, Surface.DESK_KEY, "typed while running", hard=False)


@pytest.fixture
def gateway_and_log(provider: ProviderConfig) -> Iterator[tuple[Gateway, EventLog]]:
    gateway = Gateway(GatewayConfig(provider=provider))
    log = EventLog()
    gateway.subscribe(log)
    yield gateway, log
    assert gateway.shutdown(timeout_s=5).threads_left == []


def test_session_interrupt_refuses_a_soft_stop_and_the_turn_goes_on(
    gateway_and_log: tuple[Gateway, EventLog], demo_server: DemoModelServer
) -> None:
    gateway, log = gateway_and_log
    demo_server.configure(tokens_per_second=40.0)
    session = gateway.session_create()
    turn_id = gateway.prompt_submit(session, "Tell me about soft stops").turn_id
    assert log.wait_for(lambda events: any(isinstance(e.payload, MessageDelta) for e in events))
    with pytest.raises(GatewayError, match="a soft interrupt is a steer") as refused:
        gateway.session_interrupt(session, SOFT)
    assert refused.value.code == -32602
    complete = log.complete(turn_id, timeout=30)
    assert complete.status == "completed" and complete.stop is None
    assert not [p for p in log.of_type(TurnState) if p.state == "stopping"]


def test_every_stop_route_refuses_a_soft_stop(
    gateway_and_log: tuple[Gateway, EventLog],
) -> None:
    gateway, _log = gateway_and_log
    session = gateway.session_create()
    for call in (
        lambda: gateway.session_interrupt(session, SOFT),
        lambda: gateway.compression_cancel(session, SOFT),
        lambda: gateway.console_cancel("no-such-command", SOFT),
    ):
        with pytest.raises(GatewayError) as refused:
            call()
        assert refused.value.code == -32602
        assert "a soft interrupt is a steer" in refused.value.message
