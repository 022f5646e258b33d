"""The demo model: a small OpenAI-compatible server on loopback that behaves like llama.cpp.

desk starts it when no real model server answers; the test suite uses it as its provider over
real HTTP. It streams deterministic Markdown at a set pace, queues requests for a fixed number
of slots, and notices a closed client connection in every phase (waiting for a slot,
processing the prompt, streaming, non-streaming), freeing the slot at once.

Public API: `DemoModelServer` (run it), `DemoConfig` (its knobs), `RecordBook` and
`RequestRecord` (what it saw), `reply_for` / `tokenize` / `plan_reply` (what it will say),
`DemoModelApp` (the bare ASGI app).


Nothing is imported here: each name is imported from its module on first use (PEP 562), so
``import demo_model.config`` loads no server; ``__init__.pyi`` names them for type checkers.
"""

from __future__ import annotations

from importlib import import_module

_WHERE = {
    "DemoConfig": ".config",
    "DemoModelApp": ".app",
    "DemoModelServer": ".server",
    "OUTCOMES": ".records",
    "RecordBook": ".records",
    "ReplyPlan": ".replies",
    "RequestRecord": ".records",
    "STREAM_FAULTS": ".config",
    "Step": ".replies",
    "ToolCallPlan": ".replies",
    "count_prompt_tokens": ".replies",
    "parse_fault": ".config",
    "plan_reply": ".replies",
    "reasoning_for": ".replies",
    "reply_for": ".replies",
    "tokenize": ".tokens",
    "tokenize_subword": ".tokens",
    "tool_calls_for": ".replies",
}
"""Each public name -> the module (relative to this package) that defines it."""

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> object:
    """Import the module that defines ``name``, keep the value here, return it."""
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(module, __name__), name)
    globals()[name] = value
    return value
