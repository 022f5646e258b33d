"""Type checkers read this; at run time the face imports each name on first use."""

from __future__ import annotations

from demo_model.app import (
    DemoModelApp,
)
from demo_model.config import (
    STREAM_FAULTS,
    DemoConfig,
    parse_fault,
)
from demo_model.records import (
    OUTCOMES,
    RecordBook,
    RequestRecord,
)
from demo_model.replies import (
    ReplyPlan,
    Step,
    ToolCallPlan,
    count_prompt_tokens,
    plan_reply,
    reasoning_for,
    reply_for,
    tool_calls_for,
)
from demo_model.server import (
    DemoModelServer,
)
from demo_model.tokens import (
    tokenize,
    tokenize_subword,
)

__all__ = [
    "DemoConfig",
    "DemoModelApp",
    "DemoModelServer",
    "OUTCOMES",
    "RecordBook",
    "ReplyPlan",
    "RequestRecord",
    "STREAM_FAULTS",
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
