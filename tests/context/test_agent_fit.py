"""The agent never sends a request that cannot fit, and learns from the server's counts."""

from __future__ import annotations

from pathlib import Path

from agent.agent import Agent
from agent.context.budget import ContextBudget
from agent.context.calibration import TokenCalibration
from agent.provider.client import ChatClient, ProviderConfig
from agent.provider.errors import RequestTooLarge
from agent.provider.types import ChatMessage, ToolCall
from agent.provider.window import ContextWindow, WindowSource
from demo_model import DemoModelServer

from .kit import prose, server_count, strict_2k

WINDOW = ContextWindow(2048, WindowSource.SERVER, "/props n_ctx")


def _agent(provider: ProviderConfig, budget: ContextBudget) -> Agent:
    return Agent(ChatClient(provider), context=budget, inactivity_timeout_s=None)


def test_a_prompt_that_cannot_fit_is_not_sent(
    provider: ProviderConfig, demo_server: DemoModelServer
) -> None:
    strict_2k(demo_server)
    result = _agent(provider, ContextBudget(WINDOW)).run_conversation([], prose(20_000))
    assert result.status == "failed" and result.exit_reason == "failed(RequestTooLarge)"
    assert isinstance(result.failure, RequestTooLarge) and result.failure.window == 2048
    assert result.error is not None and result.error.startswith("not sent: ")
    assert "/new" in result.error and "context_window" in result.error
    assert demo_server.records.list() == []  # nothing reached the server


def test_near_the_limit_the_server_counts_and_what_fits_goes_out_with_what_is_left(
    provider: ProviderConfig, demo_server: DemoModelServer
) -> None:
    strict_2k(demo_server)
    budget = ContextBudget(WINDOW)
    text = prose(6_200)  # about 1,850 tokens: the estimate alone cannot tell
    assert not budget.fit([ChatMessage("user", text)]).fits
    result = _agent(provider, budget).run_conversation([], text)
    assert result.status == "completed", result.error
    assert (budget.tokenize_supported, budget.template_supported) == (True, True)
    assert budget.calibration.last is not None
    (record,) = demo_server.records.list()
    assert record.prompt_tokens == server_count(record.messages)
    # counted exactly: the reply gets every token the window has left (one for the BOS)
    assert record.request["max_tokens"] == 2048 - record.prompt_tokens - 1


def test_near_the_limit_nothing_oversized_goes_out(
    provider: ProviderConfig, demo_server: DemoModelServer
) -> None:
    strict_2k(demo_server)
    budget = ContextBudget(WINDOW)
    result = _agent(provider, budget).run_conversation([], prose(6_700))  # ~2,000 tokens
    assert budget.template_supported is True
    assert result.exit_reason == "failed(RequestTooLarge)"
    assert isinstance(result.failure, RequestTooLarge)
    assert (
        result.failure.prompt_tokens
        == server_count([{"role": "user", "content": prose(6_700)}]) + 1
    )
    assert demo_server.records.list() == []


def test_what_the_server_counts_as_fitting_is_sent(
    provider: ProviderConfig, demo_server: DemoModelServer
) -> None:
    strict_2k(demo_server)
    budget = ContextBudget(WINDOW)
    text = prose(4_900)  # about 1,450 tokens: too many at 3 characters a token, not in truth
    assert not budget.fit([ChatMessage("user", text)]).fits
    result = _agent(provider, budget).run_conversation([], text)
    assert result.status == "completed", result.error
    (record,) = demo_server.records.list()
    assert record.prompt_tokens == server_count(record.messages)


def test_max_tokens_keeps_the_reply_inside_the_window(
    provider: ProviderConfig, demo_server: DemoModelServer
) -> None:
    strict_2k(demo_server)
    demo_server.configure(max_tokens=4000)  # the server alone would run to the window's end
    result = _agent(provider, ContextBudget(WINDOW)).run_conversation([], prose(3_000))
    assert result.status == "completed"
    (record,) = demo_server.records.list()
    assert record.request["max_tokens"] + record.prompt_tokens <= 2048
    assert record.prompt_tokens + record.tokens_generated < 2048


def test_usage_calibrates_the_count(provider: ProviderConfig, demo_server: DemoModelServer) -> None:
    strict_2k(demo_server, n_ctx=8192)
    budget = ContextBudget(ContextWindow(8192, WindowSource.SERVER))
    agent = _agent(provider, budget)
    first = agent.run_conversation([], prose(2_000))
    assert budget.calibration.measured
    history = [ChatMessage("user", prose(2_000)), *first.messages]
    following = ChatMessage("user", prose(1_500))
    estimate = budget.count([*history, following])
    agent.run_conversation(history, following.content)
    actual = demo_server.records.list()[-1].prompt_tokens
    assert abs(estimate - actual) <= 0.03 * actual


def test_a_context_400_corrects_window_and_count_then_the_call_is_made_once_more(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    strict_2k(demo_server)
    # desk believes 8,192 and 12 characters a token: the server knows better
    budget = ContextBudget(
        ContextWindow(8192, WindowSource.ASSUMED), TokenCalibration(default_chars_per_token=12.0)
    )
    call = ToolCall("call_1", "read_file", '{"path": "big.txt"}')
    history = [
        ChatMessage("user", "read big.txt"),
        ChatMessage("assistant", "", tool_calls=(call,)),
        ChatMessage("tool", prose(30_000), tool_call_id="call_1"),
    ]
    result = _agent(provider, budget).run_conversation(history)
    assert result.status == "completed", result.error
    outcomes = [(r.outcome, r.status) for r in demo_server.records.list()]
    assert outcomes == [("rejected", 400), ("completed", 200)]
    assert (budget.window.tokens, budget.window.source) == (2048, WindowSource.SERVER)
    sent = demo_server.records.list()[-1].messages
    assert len(sent[-1]["content"]) < 3_000  # the tool result was cut for this request
    assert server_count(sent) < 2048


def test_a_stopped_turn_s_prompt_does_not_break_a_strict_template(
    provider: ProviderConfig, demo_server: DemoModelServer
) -> None:
    strict_2k(demo_server)
    history = [
        ChatMessage("user", "this turn was stopped before its first token"),
        ChatMessage("user", "queued, never sent", unsent=True),
    ]
    result = _agent(provider, ContextBudget(WINDOW)).run_conversation(history, "and this one?")
    assert result.status == "completed", result.error
    (record,) = demo_server.records.list()
    assert [m["role"] for m in record.messages] == ["user"]
    assert "never sent" not in record.messages[0]["content"]
