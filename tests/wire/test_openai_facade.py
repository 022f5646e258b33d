"""The official ``openai`` client against desk's chat-completions facade."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING

import httpx
import pytest

from agent.provider.client import ProviderConfig
from contract.events import ApprovalResolved, MessageComplete, MessageDelta, ToolComplete
from demo_model.server import DemoModelServer
from tests.support import EventLog, cut_short
from tests.wire.kit import slow_reply
from tui_gateway.gateway import Gateway, GatewayConfig
from tui_gateway.wire.http_server import HttpServer
from tui_gateway.wire.openai_facade import STOPPED_FINISH_REASON

if TYPE_CHECKING:  # imported in the tests: collecting them loads no SDK
    import openai

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
    import openai

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
    import openai

    server, _log = served
    with pytest.raises(openai.AuthenticationError):
        client(server, "wrong").chat.completions.create(
            model="demo", messages=[{"role": "user", "content": "hi"}]
        )


def test_a_request_without_a_user_message_is_refused(served: tuple[HttpServer, EventLog]) -> None:
    import openai

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
    stream.close()
    cut_short(demo_server)
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


def stop_run(server: HttpServer, run_id: str) -> None:
    answer = httpx.post(
        f"{server.base_url}/v1/runs/{run_id}/stop",
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=10,
    )
    assert answer.json()["stopped"] is True


def test_a_stopped_stream_finishes_as_abort_not_stop(
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
    chunks = []
    for chunk in stream:
        chunks.append(chunk)
        if len(chunks) == 3:
            stop_run(server, run_id)
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finishes[-1] == STOPPED_FINISH_REASON == "abort"
    assert set(finishes[:-1]) == {None}
    desk = (chunks[-1].model_extra or {})["desk"]
    assert desk["status"] == "interrupted" and desk["exit_reason"] == "interrupted_by_user"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text and text == log.complete(run_id).text  # the cut reply, as far as it went


def test_a_stopped_completion_finishes_as_abort(
    served: tuple[HttpServer, EventLog], demo_server: DemoModelServer
) -> None:
    from openai.types.chat import ChatCompletion

    server, log = served
    slow_reply(demo_server)
    answers: list[object] = []

    def ask() -> None:
        answers.append(
            client(server).chat.completions.create(
                model="demo",
                messages=[{"role": "user", "content": "tell me a story about a lighthouse"}],
            )
        )

    asking = threading.Thread(target=ask)
    asking.start()
    assert log.wait_for(lambda _e: bool(log.of_type(MessageDelta)))
    stop_run(server, log.of_type(MessageDelta)[0].turn_id)
    asking.join(timeout=15)
    [completion] = answers
    assert isinstance(completion, ChatCompletion)
    choice = completion.choices[0]
    assert choice.finish_reason == "abort"
    assert choice.message.content and choice.message.content == log.of_type(MessageComplete)[0].text
    assert (completion.model_extra or {})["desk"]["exit_reason"] == "interrupted_by_user"
