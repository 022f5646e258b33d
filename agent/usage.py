"""Token usage summed over model requests: a turn's, a session's.

Each request counts what the server reported in its ``usage`` (prompt, completion, and the
prompt tokens it reused from its cache: OpenAI's ``prompt_tokens_details.cached_tokens``,
llama.cpp's ``timings.cache_n``). A request that ended without a report (a stop mid-stream,
a server that sends none) counts desk's own estimate instead, and is counted as estimated, so a
total says when part of it is desk's and not the server's. A request the server refused before
answering anything (a 4xx) costs nothing and is not counted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from agent.provider.types import ChatMessage, Completion, Usage
from agent.tokens import tokens_in_chars


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """Token counts summed over requests (tokens).

    Attributes:
        requests: model requests counted.
        prompt_tokens: prompt tokens, over every request.
        completion_tokens: completion tokens, over every request.
        cached_tokens: prompt tokens the server reused from its cache (0 when it never said).
        estimated_requests: how many of the requests are counted by desk's estimate, because
            the server reported nothing for them (a stop mid-stream).
    """

    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    estimated_requests: int = 0

    @property
    def estimated(self) -> bool:
        """True when part of the counts is desk's estimate."""
        return self.estimated_requests > 0

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    @classmethod
    def reported(cls, usage: Usage) -> TokenUsage:
        """One request as the server reported it."""
        return cls(1, usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens, 0)

    @classmethod
    def estimate(cls, prompt_tokens: int, completion_tokens: int) -> TokenUsage:
        """One request the server reported nothing for, by desk's count."""
        return cls(1, prompt_tokens, completion_tokens, 0, 1)

    def plus(self, other: TokenUsage) -> TokenUsage:
        """The sum of both."""
        return TokenUsage(
            self.requests + other.requests,
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.cached_tokens + other.cached_tokens,
            self.estimated_requests + other.estimated_requests,
        )

    def line(self) -> str:
        """One line for a person: ``12,345 in (2,000 cached) · 678 out · 3 requests``, with
        ``(some estimated)`` when part of it is desk's count."""
        cached = f" ({self.cached_tokens:,} cached)" if self.cached_tokens else ""
        plural = "s" if self.requests != 1 else ""
        text = (
            f"{self.prompt_tokens:,} in{cached} · {self.completion_tokens:,} out · "
            f"{self.requests:,} request{plural}"
        )
        if self.estimated_requests == self.requests and self.requests:
            return text + " (estimated)"
        return text + (" (some estimated)" if self.estimated else "")


def summed(usages: list[TokenUsage]) -> TokenUsage:
    """The sum of ``usages`` (zero for none)."""
    total = TokenUsage()
    for usage in usages:
        total = total.plus(usage)
    return total


class UsageTally:
    """A turn's requests, counted as they are answered (one agent's worker thread only).

    Args:
        estimate_prompt: desk's count of a request's prompt, in tokens (used only for a request
            the server reported nothing for).
    """

    def __init__(self, estimate_prompt: Callable[[list[ChatMessage]], int]) -> None:
        self._estimate_prompt = estimate_prompt
        self._open: list[ChatMessage] | None = None
        self.total = TokenUsage()
        """What the requests answered so far add up to."""

    def sent(self, messages: list[ChatMessage]) -> None:
        """A request with ``messages`` is about to be sent."""
        self._open = messages

    def answered(self, reply: Completion, *, refused: bool = False) -> None:
        """The open request ended with ``reply`` (whole, or what arrived before a stop or a
        failure); nothing happens when no request is open. ``refused``: the server answered
        nothing (a 4xx), so it is not counted."""
        messages, self._open = self._open, None
        if messages is None or refused:
            return
        if reply.usage is not None:
            self.total = self.total.plus(TokenUsage.reported(reply.usage))
            return
        chars = len(reply.content) + len(reply.reasoning)
        chars += sum(len(call.name) + len(call.arguments) for call in reply.tool_calls)
        estimate = TokenUsage.estimate(self._estimate_prompt(messages), tokens_in_chars(chars))
        self.total = self.total.plus(estimate)
