"""The stuck session of the issue, reproduced against a strict 2,048-token server, is gone.

Tried as a new user would, against llama.cpp with a 2,048-token context: a short first
exchange, three ~2,400-character prompts each stopped early, then more prompts. Before, every
later request got a 400 ("request (2786 tokens) exceeds the available context size (2048
tokens)") and only /new got out. Here 20 further turns run with no 400 at all.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.provider.client import ProviderConfig
from agent.stops import StopRequest, Surface
from agent.store import SqliteStore
from contract.events import CompressionComplete, ContextWindowKnown, MessageDelta
from demo_model import DemoModelServer
from demo_model.template import alternation_error
from tests.support import EventLog
from tui_gateway.gateway import Gateway, GatewayConfig

from .kit import ROOMY_2K, prose, server_count, strict_2k


@pytest.fixture
def desk(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> Iterator[tuple[Gateway, EventLog]]:
    strict_2k(demo_server, n_ctx=ROOMY_2K)  # the room beside today's tool definitions
    store = SqliteStore(tmp_path / "desk.db")
    gateway = Gateway(GatewayConfig(provider=provider, approvals=False, cwd=tmp_path), store=store)
    log = EventLog()
    gateway.subscribe(log)
    yield gateway, log
    assert gateway.shutdown(timeout_s=10).threads_left == []


def _stop_after_a_few_tokens(gateway: Gateway, log: EventLog, session: str, text: str) -> None:
    turn = gateway.prompt_submit(session, text).turn_id

    def streaming(_e: object) -> bool:
        return sum(1 for d in log.of_type(MessageDelta) if d.turn_id == turn) >= 3

    assert log.wait_for(streaming, 30), "the stopped prompt never streamed"
    gateway.session_interrupt(session, StopRequest.by_user(Surface.DESK_KEY), turn_id=turn)
    assert log.complete(turn, 30).status == "interrupted"


def test_the_stuck_session_runs_twenty_more_turns_without_a_400(
    desk: tuple[Gateway, EventLog], demo_server: DemoModelServer
) -> None:
    gateway, log = desk
    session = gateway.session_create()
    demo_server.configure(tokens_per_second=100.0)
    first = gateway.prompt_submit(session, "reply with exactly: hello").turn_id
    assert log.complete(first, 30).status == "completed"
    for n in range(3):
        _stop_after_a_few_tokens(gateway, log, session, f"paste {n}: " + prose(2_400))
    demo_server.configure(tokens_per_second=0)
    for n in range(20):
        if n % 5 == 4:
            text = f"another paste {n}: " + prose(2_400)
        elif n % 2:
            text = f"question {n}: " + prose(600)
        else:
            text = f"reply with exactly: done {n}"
        done = log.complete(gateway.prompt_submit(session, text).turn_id, 60)
        assert done.status == "completed", (n, done.error)
    records = demo_server.records.list()
    assert [r for r in records if r.status == 400] == []
    for record in records:
        assert alternation_error(record.messages) is None
        assert record.prompt_tokens < ROOMY_2K
        tools = record.request.get("tools")
        assert record.prompt_tokens == server_count(record.messages, tools)
    window = log.of_type(ContextWindowKnown)[-1]
    assert (window.tokens, window.text) == (ROOMY_2K, "window 2,560 from the server")
    assert window.measured
    compressions = log.of_type(CompressionComplete)
    assert any(c.status == "committed" for c in compressions)
    # a compression forced by the server's count may find nothing left to compress: it says so
    assert all(c.status in ("committed", "nothing") for c in compressions)
