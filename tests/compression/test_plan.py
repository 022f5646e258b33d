"""Head / middle / tail choice: the head keeps the first exchange, the tail the last user
message and at least six messages, and a tool call is never split from its results."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agent.compression.plan import plan_compression
from agent.provider.types import ChatMessage, ToolCall


def exchange(i: int, tools: int = 0, size: int = 400) -> list[ChatMessage]:
    calls = tuple(ToolCall(f"c{i}-{t}", "shell", '{"command": "ls"}') for t in range(tools))
    out = [ChatMessage("user", f"question {i} " + "x" * size)]
    if calls:
        out.append(ChatMessage("assistant", "", tool_calls=calls))
        out += [ChatMessage("tool", "result " + "y" * size, tool_call_id=c.id) for c in calls]
    out.append(ChatMessage("assistant", f"answer {i} " + "z" * size))
    return out


def test_head_middle_tail() -> None:
    messages = [ChatMessage("system", "be brief")]
    for i in range(12):
        messages += exchange(i)
    plan = plan_compression(messages, window_tokens=2000)
    assert plan.head_end == 3  # system + the first exchange
    assert not plan.empty
    tail = messages[plan.tail_start :]
    assert len(tail) >= 6
    assert any(m.role == "user" for m in tail)
    assert plan.tokens_in > 0


def test_a_short_transcript_has_nothing_to_compress() -> None:
    messages = [ChatMessage("system", "s"), *exchange(0), *exchange(1)]
    assert plan_compression(messages, window_tokens=8192).empty


@given(
    shape=st.lists(st.integers(min_value=0, max_value=3), min_size=1, max_size=20),
    window=st.integers(min_value=200, max_value=20000),
)
def test_tool_calls_and_results_are_never_split(shape: list[int], window: int) -> None:
    messages = [ChatMessage("system", "s")]
    for i, tools in enumerate(shape):
        messages += exchange(i, tools, size=100)
    plan = plan_compression(messages, window_tokens=window)
    for boundary in (plan.head_end, plan.tail_start):
        if 0 < boundary < len(messages):
            assert messages[boundary].role != "tool", "a tool result was cut from its call"
    assert 0 <= plan.head_end <= plan.tail_start <= len(messages)
    if not plan.empty:
        last_user = max(i for i, m in enumerate(messages) if m.role == "user")
        assert plan.tail_start <= last_user, "the last user message must stay in the tail"
        # The summary (a user message) replaces the middle: the turn after it is not a user's.
        assert messages[plan.tail_start].role != "user", "two user turns in a row"
