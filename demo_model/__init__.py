"""The demo model: a small OpenAI-compatible server on loopback that behaves like llama.cpp.

desk starts it when no real model server answers; the test suite uses it as its provider over
real HTTP. It streams deterministic Markdown at a set pace, queues requests for a fixed number
of slots, and notices a closed client connection in every phase (waiting for a slot,
processing the prompt, streaming, non-streaming), freeing the slot at once.

Public API: `DemoModelServer` (run it), `DemoConfig` (its knobs), `RecordBook` and
`RequestRecord` (what it saw), `reply_for` / `tokenize` / `plan_reply` (what it will say),
`DemoModelApp` (the bare ASGI app).
"""

from __future__ import annotations

from .app import DemoModelApp
from .config import STREAM_FAULTS, DemoConfig, parse_fault
from .records import OUTCOMES, RecordBook, RequestRecord
from .replies import (
    ReplyPlan,
    Step,
    ToolCallPlan,
    count_prompt_tokens,
    plan_reply,
    reasoning_for,
    reply_for,
    tool_calls_for,
)
from .server import DemoModelServer
from .tokens import tokenize, tokenize_subword

__all__ = [
    "OUTCOMES",
    "STREAM_FAULTS",
    "DemoConfig",
    "DemoModelApp",
    "DemoModelServer",
    "RecordBook",
    "ReplyPlan",
    "RequestRecord",
    "Step",
    "ToolCallPlan",
    "count_prompt_tokens",
    "parse_fault",
    "plan_reply",
    "reasoning_for",
    "reply_for",
    "tokenize",
    "tokenize_subword",
    "tool_calls_for",
]
