"""Compression always gets the next request under the window, when anything can.

Random transcripts of user, assistant, tool-call and tool-result messages of random sizes (turns
stopped before their reply, tool calls a crash left without a result, prompts that were never
sent), in random windows: when the next request would not fit, the compression desk plans (summaries
simulated at their full budget, the longest a model may write) leaves a request that fits by
the counter, alternates roles and pairs every tool call; or the prompt and tool definitions
alone do not fit, which no compression can change.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.compression.plan import SUMMARY_MARKER, TIGHT_MIN_BUDGET, plan_compression
from agent.compression.policy import compression_target
from agent.compression.rounds import run_rounds
from agent.context.budget import ContextBudget
from agent.context.shape import well_formed
from agent.provider.types import ChatMessage, ToolCall
from agent.provider.window import ContextWindow, WindowSource
from agent.tools.registry import ToolRegistry, default_tools
from demo_model.template import alternation_error

TOOLS = ToolRegistry(default_tools()).schemas()
WORDS = "the build failed because a test imported a module that moved last week "


def text(size: int) -> str:
    return (WORDS * (size // len(WORDS) + 1))[:size]


@st.composite
def sessions(draw: st.DrawFn) -> list[ChatMessage]:
    out = [ChatMessage("system", "You are desk's agent. Be brief.")]
    for n in range(draw(st.integers(1, 16))):
        out.append(ChatMessage("user", text(draw(st.integers(1, 9000)))))
        for k in range(draw(st.integers(0, 2))):
            call = ToolCall(f"c{n}-{k}", "read_file", '{"path": "notes.txt"}')
            out.append(ChatMessage("assistant", "", tool_calls=(call,)))
            if draw(st.integers(0, 5)):  # else a crash left the call without its result
                result = text(draw(st.integers(0, 30000)))
                out.append(ChatMessage("tool", result, tool_call_id=call.id))
        if not draw(st.integers(0, 6)):  # a queued prompt a system stop dropped
            out.append(
                ChatMessage("user", "not sent " + text(draw(st.integers(1, 900))), unsent=True)
            )
        if draw(st.booleans()):  # a reply; without one the turn was stopped or failed
            out.append(ChatMessage("assistant", text(draw(st.integers(1, 6000)))))
    return out


def fake_summary(request: list[ChatMessage], budget: int) -> str:
    """A summary as long as the budget allows, by the default count (3 characters a token)."""
    return text(max(1, budget * 3 - len(SUMMARY_MARKER) - 2))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    history=sessions(),
    window=st.sampled_from([1024, 2048, 4096, 8192, 32768]),
    prompt_chars=st.integers(1, 4000),
)
def test_every_request_after_a_compression_fits(
    history: list[ChatMessage], window: int, prompt_chars: int
) -> None:
    budget = ContextBudget(ContextWindow(window, WindowSource.SERVER))
    calibration = budget.calibration
    prompt = ChatMessage("user", text(prompt_chars))
    if budget.fit(well_formed([*history, prompt]), TOOLS).fits:
        return  # nothing to do
    extra = budget.count([prompt], TOOLS)
    target = compression_target(window, extra, measured=False)
    plan = plan_compression(
        history, window_tokens=window, calibration=calibration, target_tokens=target
    )
    shortest = f"{SUMMARY_MARKER}\n\n{fake_summary([], TIGHT_MIN_BUDGET)}"
    best = well_formed([history[0], ChatMessage("user", shortest), prompt])
    possible = budget.fit(best, TOOLS).fits  # the shortest summary of all but the system prompt
    if plan.empty:
        shape = [(m.role, len(m.content), len(m.tool_calls), m.unsent) for m in history]
        assert not possible, f"nothing planned though it could fit: {plan} {target} {shape}"
        return
    done = run_rounds(
        history,
        plan,
        window_tokens=window,
        calibration=calibration,
        target_tokens=target,
        summarise=fake_summary,
    )
    assert done is not None
    after = [*history[: done.start], done.summary, *history[done.end :]]
    request = well_formed([*after, prompt])
    assert alternation_error([m.to_wire() for m in request]) is None
    assert not any("not sent" in m.content for m in request)
    if possible:
        fit = budget.fit(request, TOOLS)
        assert fit.fits, (fit, plan, done.rounds)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    history=sessions(),
    window=st.sampled_from([1024, 2048, 4096, 8192]),
    prompt_chars=st.integers(1, 4000),
)
def test_a_plan_says_how_large_its_summary_leaves_the_transcript(
    history: list[ChatMessage], window: int, prompt_chars: int
) -> None:
    """What a plan predicts is what its summary leaves: its head and every message of its
    tail as the request carries them, and the summary at its full budget; never less."""
    budget = ContextBudget(ContextWindow(window, WindowSource.SERVER))
    calibration = budget.calibration
    extra = budget.count([ChatMessage("user", text(prompt_chars))], TOOLS)
    target = compression_target(window, extra, measured=False)
    plan = plan_compression(
        history, window_tokens=window, calibration=calibration, target_tokens=target
    )
    if plan.empty:
        return
    done = run_rounds(  # one round: the plan's own summary call
        history,
        plan,
        window_tokens=window,
        calibration=calibration,
        target_tokens=None,
        summarise=fake_summary,
    )
    assert done is not None and (done.start, done.end) == (plan.head_end, plan.tail_start)
    after = [*history[: done.start], done.summary, *history[done.end :]]
    assert calibration.count(well_formed(after)) <= plan.tokens_after, plan


def _found_by_the_property() -> list[ChatMessage]:
    """A transcript the property above found: long prompts at both ends, a row of one-letter
    prompts, tool calls (the last two without results: a crash), in a 4,096-token window."""
    out = [ChatMessage("system", "You are desk's agent. Be brief.")]
    users = [4150, 2284, *[1] * 9]
    out += [ChatMessage("user", text(n)) for n in users]
    out += [ChatMessage("assistant", text(232)), ChatMessage("user", text(2284))]

    def called(name: str, result: int | None) -> list[ChatMessage]:
        call = ToolCall(name, "read_file", '{"path": "notes.txt"}')
        asked = [ChatMessage("assistant", "", tool_calls=(call,))]
        return asked + (
            [] if result is None else [ChatMessage("tool", text(result), tool_call_id=name)]
        )

    out += called("c11-0", 259) + called("c11-1", 253)
    out += [ChatMessage("user", text(256)), ChatMessage("user", text(253))]
    out += called("c13-0", 253) + called("c13-1", 55)
    out += [ChatMessage("user", text(244))] + called("c14-0", None)
    out += [ChatMessage("user", text(3172))] + called("c15-0", None)
    return out


def test_the_transcript_the_property_found_fits_after_its_compression() -> None:
    history, window = _found_by_the_property(), 4096
    budget = ContextBudget(ContextWindow(window, WindowSource.SERVER))
    prompt = ChatMessage("user", text(1))
    target = compression_target(window, budget.count([prompt], TOOLS), measured=False)
    plan = plan_compression(
        history, window_tokens=window, calibration=budget.calibration, target_tokens=target
    )
    done = run_rounds(
        history,
        plan,
        window_tokens=window,
        calibration=budget.calibration,
        target_tokens=target,
        summarise=fake_summary,
    )
    assert done is not None
    after = [*history[: done.start], done.summary, *history[done.end :]]
    assert budget.fit(well_formed([*after, prompt]), TOOLS).fits
    # and as small as it aimed at: the summary call read every message it was to replace
    # (the pastes as summaries of their own, the rest cut to a share of what those leave)
    assert budget.calibration.count(well_formed(after)) <= target


def _built(shape: str) -> list[ChatMessage]:
    """A transcript from a short notation: ``u300`` a user message of 300 characters,
    ``a80`` an assistant reply, ``c`` a tool call and ``r40`` its result of 40 characters
    (a call without one was left unanswered by a crash), after the usual system prompt."""
    out = [ChatMessage("system", "You are desk's agent. Be brief.")]
    calls = 0
    for item in shape.split():
        kind, size = item[0], int(item[1:] or 0)
        if kind == "c":
            calls += 1
            call = ToolCall(f"c{calls}", "read_file", '{"path": "notes.txt"}')
            out.append(ChatMessage("assistant", "", tool_calls=(call,)))
        elif kind == "r":
            out.append(ChatMessage("tool", text(size), tool_call_id=f"c{calls}"))
        else:
            out.append(ChatMessage("user" if kind == "u" else "assistant", text(size)))
    return out


FOUND = [
    # the unanswered calls and the notes of the tail count: the plan keeps a smaller tail
    ("u368 u1 u1 u1 u1 u1 c r0 u1 c c", 1024, 1),
    # the plan whose rounds can reach the target is chosen over one that comes closer in one
    # call but cannot (the first exchange it keeps is too large)
    ("u12 c u1 a103 u442 u1 u442 u1 u1 u1 u1 u1 c u73 u442 u442 c", 1024, 1),
    # the second round summarises the first exchange too, with the first round's summary
    (
        "u1807 c r577 c r445 u2278 c c u6328 a82 u2285 c r1 c u2284 u2284 u103 c c r25 u1 c "
        "u103 c c r103 u103 a2284 u2284 u2284 c r103 c r103 a2284 u2284 a1 u88 c r103 a103 "
        "u103 c r730",
        4096,
        278,
    ),
    # the second round writes the first round's summary shorter, keeping the last prompt
    (
        "u985 c c r2929 u1 u1 c u103 c c u1 c u2284 c c u103 c r73 a103 u103 c c r103 u2284 c "
        "a1 u61 c c r103 u103 c c r103 a103 u2284 a67 u3228 u3",
        4096,
        1,
    ),
]
"""Transcripts (:func:`_built`'s notation), windows and prompt sizes the property found."""


@pytest.mark.parametrize(("shape", "window", "prompt_chars"), FOUND)
def test_other_transcripts_the_property_found_reach_their_target(
    shape: str, window: int, prompt_chars: int
) -> None:
    history = _built(shape)
    budget = ContextBudget(ContextWindow(window, WindowSource.SERVER))
    prompt = ChatMessage("user", text(prompt_chars))
    target = compression_target(window, budget.count([prompt], TOOLS), measured=False)
    plan = plan_compression(
        history, window_tokens=window, calibration=budget.calibration, target_tokens=target
    )
    done = run_rounds(
        history,
        plan,
        window_tokens=window,
        calibration=budget.calibration,
        target_tokens=target,
        summarise=fake_summary,
    )
    assert done is not None
    after = [*history[: done.start], done.summary, *history[done.end :]]
    assert budget.fit(well_formed([*after, prompt]), TOOLS).fits
    assert budget.calibration.count(well_formed(after)) <= target
