"""The official ``openai`` client against desk's chat-completions facade."""

from __future__ import annotations

import time
from collections.abc import Iterator

import openai
import pytest

from agent.provider.client import ProviderConfig
from demo_model.server import DemoModelServer
from tests.support import EventLog
from tests.wire.helpers import CLOSE_BOUND_S, close_delay_s, slow_reply
from tui_gateway.events import ApprovalResolved, ToolComplete
from tui_gateway.gateway import Gateway, GatewayConfig
from tui_gateway.wire.http_server import HttpServer

TOKEN = "facade-token"


@pytest.fixture
def served(provider: ProviderConfig) -> Iterator[tuple[HttpServer, EventLog]]:
    gateway = Gateway(GatewayConfig(provider=provider))
    log = EventLog()
    gateway.subscribe(log)
    server = HttpServer(gateway, TOKEN).start()
    try:
        yield server, log
    finally:
        server.stop()


def client(server: HttpServer, key: str = TOKEN) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url + "/v1", api_key=key, max_retries=0)


def test_non_streaming(served: tuple[HttpServer, EventLog]) -> None:
    server, _log = served
    completion = client(server).chat.completions.create(
        model="demo",
        messages=[
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "reply with exactly: hello from the facade"},
        ],
    )
    choice = completion.choices[0]
    assert choice.message.content == "hello from the facade"
    assert choice.message.role == "assistant" and choice.finish_reason == "stop"
    assert completion.object == "chat.completion" and completion.model == "demo"
    assert completion.usage is not None and completion.usage.completion_tokens == 4
    assert completion.id.startswith("chatcmpl-")
    extra = completion.model_extra or {}
    assert extra["desk"]["exit_reason"] == "completed"


def test_streaming(served: tuple[HttpServer, EventLog]) -> None:
    server, _log = served
    stream = client(server).chat.completions.create(
        model="demo",
        messages=[{"role": "user", "content": "reply with exactly: one two three four five"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "one two three four five"
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finishes[-1] == "stop" and set(finishes[:-1]) == {None}
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 5
    assert len({c.id for c in chunks}) == 1


def test_a_wrong_key_is_refused(served: tuple[HttpServer, EventLog]) -> None:
    server, _log = served
    with pytest.raises(openai.AuthenticationError):
        client(server, "wrong").chat.completions.create(
            model="demo", messages=[{"role": "user", "content": "hi"}]
        )


def test_a_request_without_a_user_message_is_refused(served: tuple[HttpServer, EventLog]) -> None:
    server, _log = served
    with pytest.raises(openai.BadRequestError):
        client(server).chat.completions.create(
            model="demo", messages=[{"role": "system", "content": "hi"}]
        )


def test_leaving_a_stream_early_is_a_system_stop(
    served: tuple[HttpServer, EventLog], demo_server: DemoModelServer
) -> None:
    server, log = served
    slow_reply(demo_server)
    stream = client(server).chat.completions.create(
        model="demo",
        messages=[{"role": "user", "content": "tell me a story about a lighthouse"}],
        stream=True,
    )
    run_id = stream.response.headers["x-desk-run-id"]
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            break
    left_at = time.monotonic()
    stream.close()
    assert close_delay_s(demo_server, left_at) < CLOSE_BOUND_S
    assert log.complete(run_id).exit_reason == "interrupted_by_system(api.disconnect)"


def test_a_tool_call_that_needs_approval_is_denied(served: tuple[HttpServer, EventLog]) -> None:
    server, log = served
    prompt = 'call tool shell with {"command": "echo should-not-run"}'
    completion = client(server).chat.completions.create(
        model="demo", messages=[{"role": "user", "content": prompt}]
    )
    assert completion.choices[0].finish_reason == "stop"
    [resolved] = log.of_type(ApprovalResolved)
    assert resolved.decision == "deny"
    [tool] = log.of_type(ToolComplete)
    assert tool.is_error and tool.exit_code is None
