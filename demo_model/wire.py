"""OpenAI chat-completion wire shapes: stream chunks, SSE framing, full completions, usage."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .asgi import dumps
from .replies import Step

DONE = b"data: [DONE]\n\n"


def sse(value: Any) -> bytes:
    """Frame one JSON value as a server-sent event: ``data: {...}\\n\\n``."""
    return b"data: " + dumps(value) + b"\n\n"


@dataclass(frozen=True)
class Envelope:
    """The fields every chunk (or completion) of one response repeats.

    Attributes:
        id: completion id, e.g. ``"chatcmpl-demo-7"``.
        created: Unix time in whole seconds.
        model: the model name echoed back.
    """

    id: str
    created: int
    model: str

    def chunk(
        self,
        delta: dict[str, Any],
        finish_reason: str | None = None,
        usage: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Return a ``chat.completion.chunk`` with one choice."""
        value: dict[str, Any] = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
        }
        if usage is not None:
            value["usage"] = usage
        return value

    def usage_chunk(self, usage: dict[str, Any]) -> dict[str, Any]:
        """Return the final ``choices: []`` chunk carrying usage (``include_usage``)."""
        return {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [],
            "usage": usage,
        }

    def completion(
        self, steps: Sequence[Step], finish_reason: str | None, usage: dict[str, Any]
    ) -> dict[str, Any]:
        """Return a full ``chat.completion`` for the generated steps."""
        content = "".join(s.text for s in steps if s.kind == "content")
        reasoning = "".join(s.text for s in steps if s.kind == "reasoning")
        calls: dict[int, dict[str, Any]] = {}
        for step in steps:
            if step.tool is None:
                continue
            call = calls.setdefault(
                step.tool.index,
                {
                    "id": step.tool.id,
                    "type": "function",
                    "function": {"name": step.tool.name, "arguments": ""},
                },
            )
            call["function"]["arguments"] += step.text
        message: dict[str, Any] = {
            "role": "assistant",
            "content": None if calls and not content else content,
        }
        if reasoning:
            message["reasoning_content"] = reasoning
        if calls:
            message["tool_calls"] = [calls[index] for index in sorted(calls)]
        return {
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
            "usage": usage,
        }

    def surrogate_chunk(self, text: str) -> bytes:
        """Return an SSE event whose content is ``text`` with every non-ASCII character as a
        JSON escape (so lone surrogates can be sent: the ``surrogate`` fault)."""
        value = self.chunk({"content": text})
        return b"data: " + json.dumps(value, separators=(",", ":")).encode("ascii") + b"\n\n"

    def broken_chunk(self) -> bytes:
        """Return an SSE event whose JSON is cut off in the middle (the ``malformed`` fault)."""
        whole = sse(self.chunk({"content": "this chunk is broken"}))
        return whole[: len(whole) // 2] + b"\n\n"


def delta_for(step: Step, *, first: bool) -> dict[str, Any]:
    """Return the ``delta`` of the chunk that carries one step.

    The first chunk's delta also carries ``"role": "assistant"``. A tool call's first chunk
    carries its index, id, type and name with empty arguments; later ones carry index and an
    arguments piece.
    """
    delta: dict[str, Any] = {"role": "assistant"} if first else {}
    if step.kind == "reasoning":
        delta["reasoning_content"] = step.text
    elif step.kind == "content":
        delta["content"] = step.text
    elif step.tool is not None and step.kind == "tool_header":
        delta["tool_calls"] = [
            {
                "index": step.tool.index,
                "id": step.tool.id,
                "type": "function",
                "function": {"name": step.tool.name, "arguments": ""},
            }
        ]
    elif step.tool is not None:
        delta["tool_calls"] = [{"index": step.tool.index, "function": {"arguments": step.text}}]
    return delta


def usage(prompt_tokens: int, completion_tokens: int, cached_tokens: int = 0) -> dict[str, Any]:
    """Return an OpenAI ``usage`` object (with ``prompt_tokens_details.cached_tokens`` when
    ``cached_tokens`` is above 0, capped at ``prompt_tokens``)."""
    out: dict[str, Any] = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    if cached_tokens > 0:
        out["prompt_tokens_details"] = {"cached_tokens": min(cached_tokens, prompt_tokens)}
    return out
