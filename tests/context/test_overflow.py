"""A context-size 400 is understood, in llama.cpp's, vLLM's, OpenAI's and TGI's words."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agent.provider.client import ChatClient, ProviderConfig
from agent.provider.errors import BadRequest, ContextOverflow
from agent.provider.overflow import context_overflow
from agent.provider.types import ChatMessage
from demo_model import DemoModelServer

LLAMA = {
    "error": {
        "code": 400,
        "message": "request (2786 tokens) exceeds the available context size (2048 tokens), "
        "try increasing it",
        "type": "exceed_context_size_error",
        "n_prompt_tokens": 2786,
        "n_ctx": 2048,
    }
}


def _openai(message: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "code": code}}


@pytest.mark.parametrize(
    ("status", "body", "counts"),
    [
        (400, LLAMA, (2786, 2048, None)),
        (
            400,
            {"error": {"code": 400, "type": "exceed_context_size_error", "message": "x"}},
            (None, None, None),
        ),
        (
            400,
            _openai("the request exceeds the available context size, try increasing it"),
            (None, None, None),
        ),
        (
            400,
            _openai("input (5000 tokens) is larger than the max context size (4096 tokens)"),
            (5000, 4096, None),
        ),
        (
            400,
            _openai(
                "This model's maximum context length is 4096 tokens. However, you requested "
                "5000 tokens (4500 in the messages, 500 in the completion). Please reduce the "
                "length of the messages or completion."
            ),
            (4500, 4096, 500),
        ),
        (
            400,
            _openai(
                "This model's maximum context length is 8192 tokens. However, your messages "
                "resulted in 9000 tokens. Please reduce the length of the messages.",
                "context_length_exceeded",
            ),
            (9000, 8192, None),
        ),
        (
            400,
            _openai(
                "This model's maximum context length is 4096 tokens. However, your request has "
                "6000 input tokens. Please reduce the length of the input messages."
            ),
            (6000, 4096, None),
        ),
        (
            400,
            _openai(
                "Your input exceeds the context window of this model. Please adjust your input "
                "and try again.",
                "context_length_exceeded",
            ),
            (None, None, None),
        ),
        (
            422,
            {
                "error": "Input validation error: `inputs` tokens + `max_new_tokens` must be "
                "<= 4096. Given: 4000 `inputs` tokens and 500 `max_new_tokens`",
                "error_type": "validation",
            },
            (4000, 4096, 500),
        ),
    ],
)
def test_each_phrasing_gives_the_server_s_counts(
    status: int, body: dict[str, Any], counts: tuple[int | None, int | None, int | None]
) -> None:
    found = context_overflow(status, body, str(body), "one line")
    assert isinstance(found, ContextOverflow)
    assert (found.prompt_tokens, found.window, found.completion_tokens) == counts
    assert found.message == "one line" and found.status == status


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (400, _openai("'messages' must be a non-empty array")),
        (400, _openai("Conversation roles must alternate user/assistant/user/assistant/...")),
        (500, LLAMA),
        (400, None),
    ],
)
def test_other_answers_are_not_an_overflow(status: int, body: dict[str, Any] | None) -> None:
    assert context_overflow(status, body, "", "x") is None


def test_the_client_raises_it_with_the_demo_model_s_counts(demo_server: DemoModelServer) -> None:
    demo_server.configure(n_ctx=64)
    client = ChatClient(ProviderConfig(demo_server.base_url, "demo"))
    messages = [ChatMessage("user", "word " * 100)]

    async def ask(stream: bool) -> None:
        async with client.session() as http:
            if stream:
                await client.stream(http, messages, lambda _d: None)
            else:
                await client.complete(http, messages)

    for stream in (True, False):
        with pytest.raises(ContextOverflow) as caught:
            asyncio.run(ask(stream))
        assert (caught.value.prompt_tokens, caught.value.window) == (104, 64)
        assert isinstance(caught.value, BadRequest)  # still a 4xx for whoever only knows that
        assert "exceeds the available context size (64 tokens)" in caught.value.message
