"""Pure parts of the demo model: replies, tokenizer, knobs, slot pool."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from demo_model import (
    DemoConfig,
    count_prompt_tokens,
    parse_fault,
    plan_reply,
    reasoning_for,
    reply_for,
    tokenize,
    tool_calls_for,
)
from demo_model.slots import SlotPool

TOOLS = [{"type": "function", "function": {"name": "read_file", "parameters": {}}}]


@given(st.text())
def test_tokenize_round_trips_and_pieces_are_words(text: str) -> None:
    pieces = tokenize(text)
    assert "".join(pieces) == text
    assert all(pieces)
    for piece in pieces[1:]:
        assert not piece[0].isspace()  # only the first piece may start with whitespace
        assert len(piece.split()) == 1


def test_default_reply_is_markdown_and_deterministic() -> None:
    messages = [{"role": "user", "content": "How do I sort a list of tuples by the second item?"}]
    reply = reply_for(messages)
    assert reply == reply_for([dict(m) for m in messages])
    assert reply.startswith("## About: How do I sort a list...\n")
    assert 'You wrote: "How do I sort a list of tuples by the second item?"' in reply
    assert "\n- " in reply and "```python\n" in reply and "| step |" in reply
    assert 200 <= len(tokenize(reply)) <= 350
    assert reply != reply_for([{"role": "user", "content": "something else entirely"}])


def test_reply_fits_the_default_cap_even_for_a_huge_prompt() -> None:
    reply = reply_for([{"role": "user", "content": "word " * 5000}])
    assert len(tokenize(reply)) < DemoConfig().max_tokens


def test_reply_uses_the_last_user_message_and_text_parts() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "first question"},
        {"role": "assistant", "content": "an answer"},
        {"role": "user", "content": [{"type": "text", "text": "reply with exactly: two parts"}]},
    ]
    assert reply_for(messages) == "two parts"


def test_reply_with_exactly_keeps_the_text_verbatim() -> None:
    prompt = "Please reply with exactly:  spaced\nand multi-line  "
    assert reply_for([{"role": "user", "content": prompt}]) == " spaced\nand multi-line  "
    assert reply_for([{"role": "user", "content": "REPLY WITH EXACTLY: Ok"}]) == "Ok"


def test_tool_call_needs_tools() -> None:
    messages = [{"role": "user", "content": 'call tool read_file with {"path": "a.txt"}'}]
    assert tool_calls_for(messages) == ()
    assert reply_for(messages).startswith("## About")
    calls = tool_calls_for(messages, tools=TOOLS)
    assert [(c.index, c.name, c.arguments) for c in calls] == [
        (0, "read_file", '{"path": "a.txt"}')
    ]
    assert calls[0].id.startswith("call_")
    assert reply_for(messages, tools=TOOLS) == ""
    assert "".join(calls[0].argument_pieces()) == calls[0].arguments
    assert 2 <= len(calls[0].argument_pieces()) <= 3


def test_several_tool_calls_and_invalid_arguments() -> None:
    prompt = 'call tool a with {"x": [1, {"y": 2}]} then call tool b with {not json\nmore text'
    calls = tool_calls_for([{"role": "user", "content": prompt}], tools=TOOLS)
    assert [(c.name, c.arguments) for c in calls] == [
        ("a", '{"x": [1, {"y": 2}]}'),
        ("b", "{not json"),
    ]
    json.loads(calls[0].arguments)
    assert len({c.id for c in calls}) == 2


def test_tool_result_reply_quotes_first_lines() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "call tool ls with {} and call tool cat with {}"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}},
                {"id": "c2", "type": "function", "function": {"name": "cat", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "a.txt\nb.txt"},
        {"role": "tool", "tool_call_id": "c2", "content": ""},
    ]
    assert tool_calls_for(messages, tools=TOOLS) == ()
    assert reply_for(messages, tools=TOOLS) == (
        "The tool `ls` returned:\n\n> a.txt\n\n"
        "The tool `cat` returned:\n\n> (empty)\n\n"
        "That is what the tool reported."
    )


def test_plan_orders_reasoning_content_and_tool_steps() -> None:
    messages = [{"role": "user", "content": "call tool read_file with {}"}]
    plan = plan_reply(messages, tools=TOOLS, reasoning=True)
    kinds = [step.kind for step in plan.steps()]
    assert kinds[0] == "reasoning" and "content" not in kinds
    assert kinds[kinds.index("tool_header") :] == ["tool_header", "tool_arguments"]
    assert plan.reasoning == reasoning_for(messages)
    text_plan = plan_reply([{"role": "user", "content": "hi"}])
    assert [s.text for s in text_plan.steps()] == tokenize(text_plan.content)


def test_prompt_tokens_count_every_message() -> None:
    messages = [{"role": "system", "content": "a b c"}, {"role": "user", "content": "d e"}]
    assert count_prompt_tokens(messages) == 3 + 2 + 2 * 4


def test_config_validation_and_all_or_nothing_apply() -> None:
    config = DemoConfig(tokens_per_second=10)
    assert isinstance(config.tokens_per_second, float)
    with pytest.raises(ValueError):
        DemoConfig(slots=0)
    with pytest.raises(ValueError):
        DemoConfig(fault="explode")
    with pytest.raises(TypeError):
        DemoConfig(slots="2")  # type: ignore[arg-type]
    with pytest.raises(KeyError):
        config.apply({"no_such_knob": 1})
    with pytest.raises(ValueError):
        config.apply({"slots": 3, "max_tokens": 0})
    assert config.slots == 1 and config.max_tokens == 400  # nothing changed
    config.apply({"slots": 3, "fault": "http:503", "api_key": None})
    assert (config.slots, config.fault) == (3, "http:503")
    assert parse_fault("http:429") == ("http", 429)
    assert parse_fault("stall") == ("stall", None)
    with pytest.raises(ValueError):
        parse_fault("http:200")


def test_slot_pool_is_fifo_and_survives_cancellation() -> None:
    async def scenario() -> list[str]:
        capacity = [1]
        pool = SlotPool(lambda: capacity[0])
        order: list[str] = []
        first = await pool.acquire()

        async def waiter(name: str) -> None:
            slot = await pool.acquire()
            order.append(f"{name}:{slot}")

        tasks = [asyncio.create_task(waiter(n)) for n in ("a", "b", "c")]
        await asyncio.sleep(0)
        assert pool.waiting == 3
        tasks[1].cancel()  # b gives up while queued
        await asyncio.sleep(0)
        assert pool.waiting == 2
        pool.release(first)
        await tasks[0]
        assert order == ["a:0"]
        capacity[0] = 2
        pool.wake()
        await tasks[2]
        assert order == ["a:0", "c:1"]
        assert pool.snapshot() == [(0, True), (1, True)]
        return order

    assert asyncio.run(scenario()) == ["a:0", "c:1"]
