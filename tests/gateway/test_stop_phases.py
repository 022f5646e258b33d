"""A stop in every phase of a turn closes the provider connection for real and is booked right.

Each test runs a real turn through the gateway against the demo model server on loopback and
checks the server's own record of the request: when it saw the peer close, and that its slot
was freed.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.provider.client import ProviderConfig
from agent.provider.types import ChatMessage
from agent.stops import StopRequest, Surface
from contract.events import MessageDelta, ToolComplete
from demo_model.replies import reply_for
from demo_model.server import DemoModelServer
from tests.support import EventLog, cut_short
from tui_gateway.gateway import Gateway, GatewayConfig


def make_gateway(provider: ProviderConfig, *, stream: bool = True) -> tuple[Gateway, EventLog]:
    gateway = Gateway(GatewayConfig(provider=provider, stream=stream))
    log = EventLog()
    gateway.subscribe(log)
    return gateway, log


@pytest.fixture
def gateway_and_log(provider: ProviderConfig) -> Iterator[tuple[Gateway, EventLog]]:
    gateway, log = make_gateway(provider)
    yield gateway, log
    report = gateway.shutdown(timeout_s=5)
    assert report.threads_left == []


def expected_reply(prompt: str) -> str:
    return reply_for([ChatMessage(role="user", content=prompt).to_wire()])


def join_workers(gateway: Gateway) -> None:
    for thread in gateway.worker_threads():
        thread.join(5)
    assert gateway.worker_threads() == []


def test_streamed_turn_completes_with_exactly_the_server_text(
    gateway_and_log: tuple[Gateway, EventLog], demo_server: DemoModelServer
) -> None:
    gateway, log = gateway_and_log
    session = gateway.session_create()
    turn_id = gateway.prompt_submit(session, "Tell me about stopping turns").turn_id
    complete = log.complete(turn_id)
    assert complete.status == "completed"
    assert complete.exit_reason == "completed"
    want = expected_reply("Tell me about stopping turns")
    assert complete.text == want
    assert log.text_of(turn_id) == want
    assert complete.completion_tokens == demo_server.records.last().tokens_generated
    history = gateway.history(session)
    assert [m.role for m in history] == ["user", "assistant"]
    assert history[1].content == want


@pytest.mark.parametrize("phase", ["first_byte", "streaming", "non_streaming"])
@pytest.mark.parametrize("surface", [Surface.DESK_KEY, Surface.DESK_BUTTON])
def test_user_stop_closes_the_connection_in_every_phase(
    phase: str, surface: Surface, demo_server: DemoModelServer, provider: ProviderConfig
) -> None:
    if phase == "first_byte":
        demo_server.configure(prompt_delay_s=30.0)
    else:
        demo_server.configure(tokens_per_second=60.0)
    threads_before = set(threading.enumerate())
    gateway, log = make_gateway(provider, stream=phase != "non_streaming")
    threads_before |= set(threading.enumerate())  # the subscription's delivery thread
    session = gateway.session_create()
    prompt = "Explain cancellation in depth"
    turn_id = gateway.prompt_submit(session, prompt).turn_id

    if phase == "streaming":
        assert log.wait_for(lambda ev: any(isinstance(e.payload, MessageDelta) for e in ev))
    else:  # the server holds the request: processing the prompt, or generating unstreamed
        field = "slot_acquired_at" if phase == "first_byte" else "first_token_at"
        assert demo_server.records.wait_for(
            lambda recs: bool(recs) and getattr(recs[-1], field) is not None, timeout=5
        )

    stop = StopRequest.by_user(surface)
    assert gateway.session_interrupt(session, stop) == turn_id
    complete = log.complete(turn_id)

    cut_short(demo_server)  # how fast: bench/cancel_latency.py

    assert complete.status == "interrupted"
    assert complete.exit_reason == "interrupted_by_user"
    assert complete.stop is not None
    assert complete.stop.issuer == "user" and complete.stop.surface == surface.value
    want = expected_reply(prompt)
    assert want.startswith(complete.text)
    assert len(complete.text) < len(want)
    if phase == "streaming":
        assert complete.text, "the partial reply was lost"
        assert complete.text == log.text_of(turn_id)
        assert gateway.history(session)[-1].content == complete.text

    join_workers(gateway)
    gateway.shutdown(timeout_s=5)
    assert set(threading.enumerate()) - threads_before == set()


def test_next_prompt_gets_the_one_slot_at_once_after_a_stop(
    gateway_and_log: tuple[Gateway, EventLog], demo_server: DemoModelServer
) -> None:
    gateway, log = gateway_and_log
    demo_server.configure(tokens_per_second=60.0)
    session = gateway.session_create()
    first = gateway.prompt_submit(session, "a long answer please").turn_id
    assert log.wait_for(lambda ev: any(isinstance(e.payload, MessageDelta) for e in ev))
    gateway.session_interrupt(session, StopRequest.by_user(Surface.DESK_KEY))
    log.complete(first)
    demo_server.configure(tokens_per_second=2000.0)
    second = gateway.prompt_submit(session, "reply with exactly: still here").turn_id
    complete = log.complete(second)
    assert complete.status == "completed"
    assert complete.text == "still here"
    records = demo_server.records.list()
    assert len(records) == 2, "desk sent a request the person did not ask for"
    # desk closed the stopped request (the server freed its slot then, not at the reply's
    # end): the next one got the one slot at once. The server may take the new connection a
    # moment before it reads the old one's close, so the order of those two is not desk's.
    assert records[0].outcome == "client_closed"
    assert records[0].slot_released_at is not None and records[1].slot_acquired_at is not None
    assert records[0].slot_released_at <= records[1].slot_acquired_at
    assert records[0].peer_closed_at is not None
    assert records[0].peer_closed_at <= records[1].slot_acquired_at


def test_shutdown_while_streaming_is_a_system_stop(
    demo_server: DemoModelServer, provider: ProviderConfig
) -> None:
    demo_server.configure(tokens_per_second=60.0)
    gateway, log = make_gateway(provider)
    session = gateway.session_create()
    turn_id = gateway.prompt_submit(session, "stream for a while").turn_id
    assert log.wait_for(lambda ev: any(isinstance(e.payload, MessageDelta) for e in ev))
    report = gateway.shutdown()
    assert report.turns_stopped == 1
    assert report.threads_left == []
    complete = log.complete(turn_id, timeout=0)  # delivered before shutdown returned
    assert complete.exit_reason == "interrupted_by_system(gateway.shutdown)"
    assert complete.stop is not None and complete.stop.issuer == "system"
    assert demo_server.records.wait_for(lambda r: r[-1].peer_closed_at is not None, timeout=5)
    assert gateway.worker_threads() == []


def test_a_provider_that_sends_nothing_is_stopped_as_inactivity(
    demo_server: DemoModelServer, provider: ProviderConfig
) -> None:
    demo_server.configure(prompt_delay_s=30.0)
    gateway = Gateway(GatewayConfig(provider=provider, inactivity_timeout_s=0.3))
    log = EventLog()
    gateway.subscribe(log)
    try:
        turn_id = gateway.prompt_submit(gateway.session_create(), "anyone there?").turn_id
        complete = log.complete(turn_id, timeout=10)
    finally:
        gateway.shutdown(timeout_s=5)
    assert complete.exit_reason == "interrupted_by_system(inactivity)"
    assert complete.stop is not None and complete.stop.issuer == "system"
    assert "no reply from the model server" in complete.stop.reason
    assert demo_server.records.wait_for(lambda r: r[-1].peer_closed_at is not None, timeout=5)


def test_a_tool_call_streamed_slowly_is_activity_not_inactivity(
    demo_server: DemoModelServer, provider: ProviderConfig, tmp_path: Path
) -> None:
    # Four list_dir calls in one reply: 16 chunks a quarter of a second apart, none of them
    # text. The stream lasts about 4 s; the watchdog's bound is 1.5 s between two chunks.
    demo_server.configure(tokens_per_second=4.0)
    config = GatewayConfig(
        provider=provider, inactivity_timeout_s=1.5, approvals=False, cwd=tmp_path
    )
    gateway = Gateway(config)
    log = EventLog()
    gateway.subscribe(log)
    prompt = " ".join(["call tool list_dir with " + json.dumps({"path": "."})] * 4)
    try:
        turn_id = gateway.prompt_submit(gateway.session_create(), prompt).turn_id
        # the calls stream at that pace; the reply after them (a request keeps the pace it
        # found) comes whole at once
        assert demo_server.records.wait_for_record(lambda r: r.tokens_generated > 0, 30)
        demo_server.configure(tokens_per_second=400.0)
        complete = log.complete(turn_id, timeout=30)
    finally:
        gateway.shutdown(timeout_s=5)
    first = demo_server.records.list()[0]
    assert first.finish_reason == "tool_calls" and first.tokens_generated == 16
    assert complete.exit_reason == "completed", complete.stop
    assert len(log.of_type(ToolComplete)) == 4
