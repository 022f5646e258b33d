"""Usage: the server's counts of every request, summed per turn and per session, equal what
the demo model reported; a stop mid-stream counts desk's estimate, marked as such; the totals
survive a restart (the store) and /usage says them."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.provider.client import ProviderConfig
from agent.provider.types import Usage
from agent.stops import StopRequest, Surface
from agent.store import SqliteStore
from agent.usage import TokenUsage
from contract.events import (
    ConsoleComplete,
    ConsoleOutput,
    MessageComplete,
    MessageDelta,
    TurnState,
)
from demo_model import DemoModelServer
from desk.receipts import format_stop_receipt
from tests.support import EventLog, cut_short
from tui_gateway.gateway import Gateway, GatewayConfig


def test_the_cached_count_is_read_where_the_server_says_it() -> None:
    openai = {
        "prompt_tokens": 90,
        "completion_tokens": 5,
        "prompt_tokens_details": {"cached_tokens": 64},
    }
    assert Usage.from_wire(openai) == Usage(90, 5, 95, 64)
    llama = {"prompt_tokens": 90, "completion_tokens": 5}
    assert Usage.from_wire(llama, {"cache_n": 80, "prompt_n": 10}) == Usage(90, 5, 95, 80)
    assert Usage.from_wire(llama) == Usage(90, 5, 95, 0)


def _gateway(provider: ProviderConfig, tmp_path: Path) -> tuple[Gateway, EventLog]:
    store = SqliteStore(tmp_path / "desk.db")
    config = GatewayConfig(provider=provider, approvals=False, cwd=tmp_path)
    gateway = Gateway(config, store=store)
    log = EventLog()
    gateway.subscribe(log)
    return gateway, log


def _reported(server: DemoModelServer) -> TokenUsage:
    """What the demo server reported, summed over its chat requests."""
    cached = server.config.cached_prompt_tokens
    total = TokenUsage()
    for r in server.records.list():
        if r.path.endswith("/chat/completions") and r.outcome == "completed":
            total = total.plus(
                TokenUsage(1, r.prompt_tokens, r.tokens_generated, min(cached, r.prompt_tokens))
            )
    return total


def test_the_session_totals_are_the_sum_of_the_servers_usage(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    demo_server.configure(cached_prompt_tokens=7)
    gateway, log = _gateway(provider, tmp_path)
    try:
        session = gateway.session_create()
        prompts = [
            "reply with exactly: one two three",
            'call tool list_dir with {"path": "."}',  # two requests: the call, then the answer
        ]
        completes: list[MessageComplete] = []
        for text in prompts:
            completes.append(log.complete(gateway.prompt_submit(session, text).turn_id, 60))
        assert [c.status for c in completes] == ["completed", "completed"]
        reported = _reported(demo_server)
        assert reported.requests == 3 and reported.cached_tokens == 21
        assert completes[1].usage is not None and completes[1].usage.requests == 2
        assert completes[-1].session_usage == reported == gateway.session_usage(session)
        turns = [c.usage for c in completes if c.usage is not None]
        assert turns[0].plus(turns[1]) == reported
        command = gateway.console_run(session, "/usage")
        assert log.wait_for(
            lambda _e: any(c.command_id == command for c in log.of_type(ConsoleComplete)), 30
        )
        said = "".join(o.text for o in log.of_type(ConsoleOutput) if o.command_id == command)
        assert f"this session: {reported.line()}" in said
        assert f"{reported.prompt_tokens:,} in (21 cached)" in said
    finally:
        assert gateway.shutdown(timeout_s=10).threads_left == []
    again, _log = _gateway(provider, tmp_path)  # a restart: the store has the counts
    try:
        assert again.session_resume(session).usage == reported
    finally:
        assert again.shutdown(timeout_s=10).threads_left == []


def test_a_stop_mid_stream_counts_desks_estimate_marked_as_estimated(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    demo_server.configure(tokens_per_second=40.0)
    gateway, log = _gateway(provider, tmp_path)
    try:
        session = gateway.session_create()
        assert log.complete(gateway.prompt_submit(session, "reply with exactly: hi").turn_id, 60)
        turn = gateway.prompt_submit(session, "write a long story").turn_id

        def streaming(_events: object) -> bool:
            return any(d.turn_id == turn and d.text for d in log.of_type(MessageDelta))

        assert log.wait_for(streaming, 30)
        gateway.session_interrupt(session, StopRequest.by_user(Surface.DESK_KEY))
        done = log.complete(turn, 30)
        cut_short(demo_server)
        assert done.status == "interrupted" and done.usage is not None
        assert done.usage.requests == 1 and done.usage.estimated_requests == 1
        assert done.usage.completion_tokens > 0 and done.usage.prompt_tokens > 0
        first = _reported(demo_server)  # the completed first turn only
        assert done.session_usage == first.plus(done.usage)
        assert done.session_usage is not None and "(some estimated)" in done.session_usage.line()
    finally:
        assert gateway.shutdown(timeout_s=10).threads_left == []


def test_a_request_the_server_refused_with_503_costs_nothing_when_stopped_in_the_wait(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    gateway, log = _gateway(provider, tmp_path)
    try:
        session = gateway.session_create()
        assert log.complete(gateway.prompt_submit(session, "reply with exactly: hi").turn_id, 60)
        before = gateway.session_usage(session)
        demo_server.configure(fault="http:503", retry_after_s=20.0)
        turn = gateway.prompt_submit(session, "write a long story").turn_id

        def waiting_to_retry(_events: object) -> bool:
            states = log.of_type(TurnState)
            return any(s.turn_id == turn and s.state == "retrying" for s in states)

        assert log.wait_for(waiting_to_retry, 30)
        gateway.session_interrupt(session, StopRequest.by_user(Surface.DESK_KEY))
        done = log.complete(turn, 30)
        refused = [r for r in demo_server.records.list() if r.status == 503]
        assert done.status == "interrupted" and len(refused) == 1
        # the server refused it and answered nothing: no usage, and the receipt says so
        assert done.usage is None or done.usage.requests == 0
        assert done.session_usage == before == gateway.session_usage(session)
        assert done.stop is not None
        assert format_stop_receipt(done.stop).endswith(" · no tokens used")
    finally:
        assert gateway.shutdown(timeout_s=10).threads_left == []


@pytest.mark.parametrize("usage", [TokenUsage(), TokenUsage(2, 10, 3, 0, 2)])
def test_a_line_says_when_all_of_it_is_estimated(usage: TokenUsage) -> None:
    assert usage.line().endswith("(estimated)") == (usage.requests > 0)
