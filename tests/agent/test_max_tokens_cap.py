"""A server that ignores a request's ``max_tokens`` (one replaying a recording does) is cut off
at that cap: the reply ends as ``length``, and the server sees the connection close and frees
its slot, instead of sending thousands of tokens nobody asked for (a ``/compress`` against such
a server asked for summary after summary, 44k tokens in 12 requests)."""

from __future__ import annotations

from agent.agent import Agent
from agent.provider.client import CAP_SLACK_PIECES, ChatClient, ProviderConfig
from demo_model.server import DemoModelServer


def test_a_reply_past_its_max_tokens_is_cut_and_the_server_sees_the_close(
    provider: ProviderConfig, demo_server: DemoModelServer
) -> None:
    demo_server.configure(
        ignore_max_tokens=True, max_tokens=3000, reply_shape="paragraph", tokens_per_second=0
    )
    agent = Agent(ChatClient(provider), delta_interval_s=0, max_tokens=40)
    result = agent.run_conversation([], "tell me everything")
    assert result.finish_reason == "length"
    assert 40 <= len(result.text.split()) <= 40 + CAP_SLACK_PIECES + 1
    record = demo_server.records.wait_for_record(
        lambda r: r.path == "/v1/chat/completions" and r.finished, timeout=10.0
    )
    assert record is not None and record.outcome == "client_closed"
    assert record.tokens_generated < 3000


def test_a_server_that_honours_max_tokens_ends_the_reply_itself(
    provider: ProviderConfig, demo_server: DemoModelServer
) -> None:
    demo_server.configure(max_tokens=3000, reply_shape="paragraph", tokens_per_second=0)
    agent = Agent(ChatClient(provider), delta_interval_s=0, max_tokens=40)
    result = agent.run_conversation([], "tell me everything")
    assert result.finish_reason == "length"
    record = demo_server.records.wait_for_record(
        lambda r: r.path == "/v1/chat/completions" and r.finished, timeout=10.0
    )
    assert record is not None and record.outcome != "client_closed"
    assert record.tokens_generated == 40
