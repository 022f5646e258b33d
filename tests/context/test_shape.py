"""Every request desk builds is well formed for the strictest chat templates.

The oracle is the demo model's strict template (the rule Mistral's, Gemma's and Llama-2's
Jinja templates enforce), applied to the request exactly as it goes on the wire.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agent.context.shape import NO_REPLY, NO_RESULT, well_formed
from agent.provider.types import ChatMessage, ToolCall
from demo_model.template import alternation_error

SYSTEM = ChatMessage("system", "you are desk")


def _call(call_id: str) -> ToolCall:
    return ToolCall(call_id, "shell", '{"command": "ls"}')


def _wire(messages: list[ChatMessage]) -> list[dict[str, object]]:
    return [m.to_wire() for m in messages]


@st.composite
def transcripts(draw: st.DrawFn) -> list[ChatMessage]:
    """Transcripts as crashes, stops, failures and queues leave them."""
    out: list[ChatMessage] = [SYSTEM] if draw(st.booleans()) else []
    for n in range(draw(st.integers(0, 14))):
        kind = draw(
            st.sampled_from(["user", "unsent", "assistant", "calls", "orphan", "system", "empty"])
        )
        text = draw(st.text(min_size=0, max_size=12))
        if kind == "user":
            out.append(ChatMessage("user", text))
        elif kind == "unsent":
            out.append(ChatMessage("user", f"UNSENT-{n}", unsent=True))
        elif kind == "assistant":
            out.append(ChatMessage("assistant", text))
        elif kind == "empty":
            out.append(ChatMessage("assistant", ""))
        elif kind == "system":
            out.append(ChatMessage("system", text))
        elif kind == "orphan":
            out.append(ChatMessage("tool", "stray", tool_call_id=f"x{n}"))
        else:
            ids = [f"c{n}-{i}" for i in range(draw(st.integers(1, 3)))]
            out.append(ChatMessage("assistant", text, tool_calls=tuple(_call(i) for i in ids)))
            answered = draw(st.lists(st.sampled_from(ids), max_size=4))  # gaps and repeats
            out.extend(ChatMessage("tool", f"out {i}", tool_call_id=i) for i in answered)
    return out


@given(transcripts(), st.text(min_size=1, max_size=8))
def test_every_request_alternates_and_pairs_every_call(
    history: list[ChatMessage], prompt: str
) -> None:
    request = well_formed([*history, ChatMessage("user", prompt)])
    assert alternation_error(_wire(request)) is None
    assert not any(m.unsent or "UNSENT-" in m.content for m in request)
    assert request[-1].role == "user" and request[-1].content.endswith(prompt)


def test_a_stopped_turn_s_prompt_joins_the_next_one() -> None:
    history = [ChatMessage("user", "first"), ChatMessage("user", "second")]
    assert well_formed(history) == [ChatMessage("user", "first\n\nsecond")]


def test_prompts_that_were_never_sent_are_left_out() -> None:
    history = [
        ChatMessage("user", "asked"),
        ChatMessage("assistant", "answered"),
        ChatMessage("user", "queued, then the desk quit", unsent=True),
        ChatMessage("user", "asked again"),
    ]
    assert [m.content for m in well_formed(history)] == ["asked", "answered", "asked again"]


def test_a_call_without_its_result_gets_one_and_a_stray_result_goes() -> None:
    calls = (_call("a"), _call("b"))
    history = [
        ChatMessage("user", "go"),
        ChatMessage("assistant", "", tool_calls=calls),
        ChatMessage("tool", "out b", tool_call_id="b"),
        ChatMessage("user", "and now?"),
        ChatMessage("tool", "stray", tool_call_id="zz"),
    ]
    request = well_formed(history)
    assert [(m.role, m.tool_call_id, m.content) for m in request[1:]] == [
        ("assistant", None, ""),
        ("tool", "a", NO_RESULT),
        ("tool", "b", "out b"),
        ("assistant", None, NO_REPLY),
        ("user", None, "and now?"),
    ]
    assert alternation_error(_wire(request)) is None
