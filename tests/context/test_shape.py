"""Every request desk builds is well formed for the strictest chat templates.

The oracle is the demo model's strict template (the rule Mistral's, Gemma's and Llama-2's
Jinja templates enforce), applied to the request exactly as it goes on the wire.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agent.context.shape import NO_REPLY, NO_RESULT, STEER_NOTE, well_formed
from agent.provider.types import ChatMessage, ToolCall
from agent.store import MessageRow
from demo_model.template import alternation_error
from tui_gateway.turns.saved_counts import saved_history

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
            st.sampled_from(
                ["user", "unsent", "steer", "assistant", "calls", "orphan", "system", "empty"]
            )
        )
        text = draw(st.text(min_size=0, max_size=12))
        if kind == "user":
            out.append(ChatMessage("user", text))
        elif kind == "steer":
            out.append(ChatMessage("user", text, steer=True))
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


def test_the_note_after_tool_results_is_chosen_by_what_follows() -> None:
    call = ChatMessage("assistant", "", tool_calls=(_call("a"),))
    result = ChatMessage("tool", "out a", tool_call_id="a")
    steer = ChatMessage("user", "also this", steer=True)
    prompt = ChatMessage("user", "next question")
    steered = well_formed([ChatMessage("user", "go"), call, result, steer])
    ended = well_formed([ChatMessage("user", "go"), call, result, prompt])
    assert [m.content for m in steered[3:]] == [STEER_NOTE, "also this"]
    assert [m.content for m in ended[3:]] == [NO_REPLY, "next question"]
    later = ChatMessage("system", "later instructions")  # joins the steer, which stays one
    joined = well_formed([ChatMessage("user", "go"), call, result, later, steer])
    assert [m.content for m in joined[3:]] == [STEER_NOTE, "later instructions\n\nalso this"]


@given(transcripts(), st.text(min_size=1, max_size=8), st.text(max_size=8))
def test_the_request_after_a_steer_is_a_prefix_of_every_later_one(
    history: list[ChatMessage], steer: str, reply: str
) -> None:
    """What the request right after a steer sent is what the next turn's request starts with
    (a server's prompt cache keeps it), whatever the transcript before."""
    call = ChatMessage("assistant", "", tool_calls=(_call("s"),))
    steered = [*history, call, ChatMessage("tool", "out s", tool_call_id="s")]
    steered.append(ChatMessage("user", steer, steer=True))
    before = _wire(well_formed(steered))
    after = _wire(
        well_formed([*steered, ChatMessage("assistant", reply), ChatMessage("user", "next")])
    )
    assert after[: len(before)] == before
    assert alternation_error(after) is None


def test_a_resumed_transcript_marks_its_steers_as_the_live_one_did() -> None:
    call = ChatMessage("assistant", "", tool_calls=(_call("a"),))
    live = [
        ChatMessage("user", "go"),
        call,
        ChatMessage("tool", "out a", tool_call_id="a"),
        ChatMessage("user", "also this", steer=True),
        ChatMessage("assistant", "done"),
        ChatMessage("user", "next"),
    ]
    turns = ["t1"] * 5 + ["t2"]
    rows = [_row(i, m, turn) for i, (m, turn) in enumerate(zip(live, turns, strict=True))]
    resumed = saved_history(rows, [])
    assert [m.steer for m in resumed] == [m.steer for m in live]
    assert _wire(well_formed(resumed)) == _wire(well_formed(live))
    assert well_formed(resumed)[3].content == STEER_NOTE


def _row(position: int, message: ChatMessage, turn_id: str) -> MessageRow:
    return MessageRow(
        id=position + 1,
        session_id="s1",
        position=position,
        order_key=position,
        role=message.role,
        content=message.content,
        reasoning=None,
        tool_calls=message.tool_calls,
        tool_call_id=message.tool_call_id,
        token_estimate=1,
        active=True,
        archived_by=None,
        partial=False,
        turn_id=turn_id,
        created_at=0.0,
    )
