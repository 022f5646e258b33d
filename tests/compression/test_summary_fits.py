"""A compression's summary requests fit the window, whatever the text they read.

The session's count is calibrated on what the server counted so far (prose, here); the
middle a compression reads may be far denser (tool output, listings: two characters a token
where prose has five). A summary request planned by that count at 60 % of the window then needs
more than all of it: it used to be sent, refused by the server, and the compression failed with
the advice meant for a person's prompt ("send a shorter prompt"). Now the server counts every
summary request first, one that does not leave the summary its budget is read shorter (each part
cut to a head and a tail with a note) and never sent as it was, and a compression that still
cannot fit says so about itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.agent import Agent
from agent.compression import Compressor
from agent.compression.backend import StoreBackend
from agent.compression.fitting import MAX_FITS, RequestBuilder
from agent.compression.plan import SUMMARY_MARKER, plan_compression
from agent.compression.policy import compression_target
from agent.compression.rounds import run_rounds
from agent.compression.template import cut_to_fit
from agent.context.budget import ContextBudget
from agent.context.shape import well_formed
from agent.context.shrink import SHORT_BELOW, note_chars
from agent.provider.client import ChatClient, ProviderConfig
from agent.provider.types import ChatMessage, ToolCall
from agent.provider.window import ContextWindow, WindowSource
from agent.store import SqliteStore
from demo_model.server import DemoModelServer
from tests.compression.kit import saved_session, snapshot
from tests.context.kit import prose
from tests.context.test_compression_fits import TOOLS, fake_summary, sessions, text

N_CTX = 8192

ADVICE = ("shorter prompt", "/new", "context_window")
"""Words of the advice a refused prompt gets: none belongs on a compression's line."""


def dense(chars: int, mark: str = "") -> str:
    """Text of two characters a token for the demo model (prose has about five)."""
    return (mark + "a b c d e f g h " * (chars // 16 + 1))[:chars]


def tool_session() -> list[ChatMessage]:
    """A first exchange, then six exchanges that ran a tool on dense output (the third's
    result is larger than the whole window, with marks at its head and its tail), then the
    last exchange."""
    out = [ChatMessage("system", "Be brief."), ChatMessage("user", "hello")]
    out.append(ChatMessage("assistant", "hi"))
    for i in range(6):
        call = ToolCall(f"c{i}", "read_file", '{"path": "listing.txt"}')
        result = dense(1800)
        if i == 2:
            result = "HEAD-OF-LOG " + dense(40_000) + " END-OF-LOG"
        out += [
            ChatMessage("user", f"step {i}: " + dense(3000)),
            ChatMessage("assistant", "", tool_calls=(call,)),
            ChatMessage("tool", result, tool_call_id=call.id),
            ChatMessage("assistant", f"done {i}: " + dense(3000)),
        ]
    return [*out, ChatMessage("user", "last"), ChatMessage("assistant", "ok")]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    s = SqliteStore(tmp_path / "desk.db")
    yield s
    s.close()


def calibrated_on_prose(provider: ProviderConfig) -> ContextBudget:
    """The session's budget after one prose turn against the server (about five characters a
    token by its count)."""
    budget = ContextBudget(ContextWindow(N_CTX, WindowSource.SERVER))
    system = [ChatMessage("system", "Be brief.")]
    turn = Agent(ChatClient(provider), context=budget).run_conversation(
        system, prose(12_000) + "\nreply with exactly: ok"
    )
    assert turn.status == "completed" and budget.calibration.chars_per_token > 4
    return budget


def compressor(
    provider: ProviderConfig, store: SqliteStore, session: str, budget: ContextBudget
) -> Compressor:
    history = store.transcript.load_history(session)
    extra = budget.count([ChatMessage("user", "next")])
    return Compressor(
        ChatClient(provider),
        StoreBackend(store),
        session,
        history,
        window_tokens=N_CTX,
        context=budget,
        target_tokens=compression_target(N_CTX, extra, measured=True),
        reserve_tokens=extra,
    )


def test_a_middle_denser_than_the_count_is_read_shorter_and_compressed(
    provider: ProviderConfig, demo_server: DemoModelServer, store: SqliteStore
) -> None:
    demo_server.configure(n_ctx=N_CTX)
    budget = calibrated_on_prose(provider)
    session = saved_session(store, tool_session())
    outcome = compressor(provider, store, session, budget).run()
    assert outcome.status == "committed", outcome.message
    assert outcome.fits and outcome.history == store.transcript.load_history(session)
    summaries = demo_server.records.list()[1:]
    assert summaries, "no summary call"
    for record in summaries:  # none refused, each with the room its summary asked for
        assert record.status == 200, (record.status, record.prompt_tokens, record.error)
        assert record.prompt_tokens + record.request["max_tokens"] <= N_CTX
    read = "\n".join(r.messages[-1]["content"] for r in summaries)
    assert "HEAD-OF-LOG" in read and "END-OF-LOG" in read  # the huge result: head and tail
    assert "left out" in read  # with a note of what was left out


def test_a_summary_request_the_server_keeps_refusing_fails_as_the_compression_s_own(
    provider: ProviderConfig, demo_server: DemoModelServer, store: SqliteStore
) -> None:
    demo_server.configure(n_ctx=N_CTX)
    budget = calibrated_on_prose(provider)
    session = saved_session(store, tool_session())
    before = snapshot(store, session)
    demo_server.configure(fault="context")  # refuses every request as larger than the window
    outcome = compressor(provider, store, session, budget).run()
    assert outcome.status == "failed" and outcome.history is None
    assert outcome.message.startswith("compression failed: the model server refused its summary")
    assert not any(words in outcome.message for words in ADVICE), outcome.message
    after = snapshot(store, session)
    assert (after.messages, after.lease) == (before.messages, None)  # nothing changed
    assert after.cooldown.step == before.cooldown.step + 1  # a failure: the cooldown holds
    summaries = demo_server.records.list()[1:]
    assert 0 < len(summaries) <= 2 * (MAX_FITS + 1)  # tried shorter a bounded number of times
    sizes = [len(r.messages[-1]["content"]) for r in summaries]
    assert sizes[-1] < sizes[0]  # read shorter each time


parts_strategy = st.lists(st.text(alphabet="abc \n", max_size=3000), min_size=1, max_size=12)


@given(parts=parts_strategy, max_chars=st.integers(1, 20_000))
def test_parts_cut_to_fit_keep_their_heads_and_tails_and_fit(
    parts: list[str], max_chars: int
) -> None:
    cut = cut_to_fit(parts, max_chars)
    assert len(cut) == len(parts)
    slack = sum(note_chars(SHORT_BELOW) + 8 for _ in parts)  # a note a part, at most
    assert sum(len(p) for p in cut) <= max(max_chars, 2 * len(parts)) + slack
    for before, after in zip(parts, cut, strict=True):
        if after != before:  # cut: its start and its end stay, with a note between
            assert "left out" in after and len(after) < len(before)
            assert before.startswith(after[:1]) and before.endswith(after[-1:])
    if sum(len(p) for p in parts) <= max_chars:
        assert cut == parts


def every_request_fits(history: list[ChatMessage], window: int, prompt: ChatMessage) -> None:
    """Plan the compression the next request needs and run its rounds with summaries at their
    full budget, checking that each summary request and its budget fit, by the count."""
    budget = ContextBudget(ContextWindow(window, WindowSource.SERVER))
    if budget.fit(well_formed([*history, prompt]), TOOLS).fits:
        return
    target = compression_target(window, budget.count([prompt], TOOLS), measured=False)
    plan = plan_compression(
        history, window_tokens=window, calibration=budget.calibration, target_tokens=target
    )
    if plan.empty:
        return

    def summarise(build: RequestBuilder, most: int) -> str:
        request = build(None)
        fit = budget.fit(request, reply_at_least=most)
        assert fit.fits, (fit, most, len(request[-1].content))
        return fake_summary(request, most)

    run_rounds(
        history,
        plan,
        window_tokens=window,
        calibration=budget.calibration,
        target_tokens=target,
        summarise=summarise,
    )


def test_an_earlier_summary_read_whole_is_counted_whole() -> None:
    """A middle too long for one call is read cut to a share a message, but an earlier summary
    is read whole (it stands for all before it): the plan counts it so (it was counted as cut,
    and the request ran 475 tokens past what the window leaves its summary)."""
    history = [ChatMessage("system", "You are desk's agent. Be brief.")]
    history.append(ChatMessage("user", f"{SUMMARY_MARKER}\n\n" + text(4000)))
    history += [ChatMessage("assistant" if i % 2 == 0 else "user", text(1057)) for i in range(30)]
    history.append(ChatMessage("assistant", text(300)))
    every_request_fits(history, 4096, ChatMessage("user", "next"))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    history=sessions(),
    window=st.sampled_from([1024, 2048, 4096, 8192]),
    prompt_chars=st.integers(1, 4000),
)
def test_every_summary_request_a_plan_builds_leaves_its_budget_inside_the_window(
    history: list[ChatMessage], window: int, prompt_chars: int
) -> None:
    """By the count the plan was made with, each request of each round (singles, earlier
    summaries read whole, the rest cut to a share) and its summary's budget fit the window:
    nothing has to be read shorter when the count is right."""
    every_request_fits(history, window, ChatMessage("user", text(prompt_chars)))
