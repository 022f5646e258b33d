"""A stopped reply's output tokens (the receipt's ``N out tokens (estimated)``) are close to what
the server sent: the streamed chunks, one token each, as the demo model (like llama.cpp) sends
them; never more than the request's ``max_tokens``; characters at the session's calibrated
ratio only when the chunks are batches."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.provider.client import ProviderConfig
from agent.provider.types import Completion, ToolCall
from agent.stops import StopRequest, Surface
from agent.store import SqliteStore
from agent.usage import MAX_CHARS_PER_PIECE, reply_tokens
from contract.events import MessageDelta
from tests.support import EventLog, cut_short, running_demo
from tui_gateway.gateway import Gateway, GatewayConfig

STORY = "write a long story"


@pytest.mark.parametrize("tokenizer", ["words", "subword"])  # 5-6 and 3.4 characters a token
def test_a_stopped_reply_counts_within_15_percent_of_the_tokens_the_server_sent(
    tmp_path: Path, tokenizer: str
) -> None:
    with running_demo(80.0, tokenizer=tokenizer) as server:
        provider = ProviderConfig(base_url=server.base_url, model=server.config.model)
        config = GatewayConfig(provider=provider, approvals=False, cwd=tmp_path)
        gateway = Gateway(config, store=SqliteStore(tmp_path / "desk.db"))
        log = EventLog()
        gateway.subscribe(log)
        try:
            session = gateway.session_create()
            turn = gateway.prompt_submit(session, STORY).turn_id

            def streamed(_events: object) -> bool:  # some way into the reply
                text = "".join(d.text for d in log.of_type(MessageDelta) if d.turn_id == turn)
                return len(text) >= 400

            assert log.wait_for(streamed, 60)
            gateway.session_interrupt(session, StopRequest.by_user(Surface.DESK_KEY))
            done = log.complete(turn, 30)
            record = cut_short(server)
            assert done.status == "interrupted" and done.usage is not None
            assert done.usage.estimated_requests == 1
            sent = record.tokens_generated
            out = done.usage.completion_tokens
            assert abs(out - sent) <= 0.15 * sent, (out, sent, len(record.text))
        finally:
            assert gateway.shutdown(timeout_s=10).threads_left == []


def test_never_more_than_the_requests_max_tokens() -> None:
    reply = Completion(content="word " * 5000, pieces=5000, max_tokens=4000)
    assert reply_tokens(reply, 4.0) == 4000
    assert reply_tokens(Completion(content="x" * 30_000, max_tokens=4000), 3.0) == 4000


def test_chunks_that_hold_more_than_a_token_count_characters_at_the_ratio() -> None:
    batched = Completion(content="a" * 900, pieces=3)  # 300 characters a chunk
    assert MAX_CHARS_PER_PIECE < 300
    assert reply_tokens(batched, 4.5) == 200
    assert reply_tokens(Completion(content="a" * 900), 4.5) == 200  # not streamed


def test_tool_call_arguments_streamed_count_as_chunks() -> None:
    call = ToolCall(id="c1", name="shell", arguments='{"command": "ls -la"}')
    assert reply_tokens(Completion(tool_calls=[call], pieces=9)) == 9
