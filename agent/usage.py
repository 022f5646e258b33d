"""Token usage summed over model requests: a turn's, a session's.

Each request counts what the server reported in its ``usage`` (prompt, completion, and the
prompt tokens it reused from its cache: OpenAI's ``prompt_tokens_details.cached_tokens``,
llama.cpp's ``timings.cache_n``). A request that ended without a report (a stop mid-stream,
a server that sends none) counts desk's own estimate instead, and is counted as estimated, so a
total says when part of it is desk's and not the server's. The estimate of a reply
(:func:`reply_tokens`) counts the chunks it streamed, one token each, as llama.cpp, vLLM,
Ollama and OpenAI send them; it counts characters, at the session's calibrated characters per
token, only when the chunks held more than a token could (a server or proxy that batches them)
or nothing streamed; and it is never more than the request's ``max_tokens``. A request the
server refused before answering anything (a 4xx, or a 429 or 503 whose retry a stop cut
short while it waited) costs nothing and is not counted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from agent.provider.types import ChatMessage, Completion, Usage
from agent.tokens import DEFAULT_CHARS_PER_TOKEN, tokens_in_chars

MAX_CHARS_PER_PIECE = 10.0
"""Characters a streamed chunk holds on average, at most, when it is one token (real
vocabularies: 2.5-4.5 a token, English words up to about 6): above it, chunks are batches."""


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


def reply_chars(reply: Completion) -> int:
    """Characters of a reply: its text, its reasoning, its tool calls' names and arguments."""
    chars = len(reply.content) + len(reply.reasoning)
    return chars + sum(len(call.name) + len(call.arguments) for call in reply.tool_calls)


def reply_tokens(reply: Completion, chars_per_token: float | None = None) -> int:
    """Desk's count of the tokens of a reply the server reported nothing for (a stop).

    Args:
        reply: what arrived (``pieces``: the chunks that carried some of it; ``max_tokens``:
            the request's cap).
        chars_per_token: the session's calibrated ratio (for a reply whose chunks are batches,
            or that did not stream); None: :data:`~agent.tokens.DEFAULT_CHARS_PER_TOKEN`.

    Returns:
        the chunks, one token each, when they average at most :data:`MAX_CHARS_PER_PIECE`
        characters; else the characters at ``chars_per_token``; at most ``max_tokens``.
    """
    chars = reply_chars(reply)
    if reply.pieces and chars <= reply.pieces * MAX_CHARS_PER_PIECE:
        tokens = reply.pieces
    else:
        tokens = tokens_in_chars(chars, chars_per_token or DEFAULT_CHARS_PER_TOKEN)
    cap = reply.max_tokens
    return min(tokens, cap) if cap is not None and cap > 0 else tokens


class UsageTally:
    """A turn's requests, counted as they are answered (one agent's worker thread only).

    Args:
        estimate_prompt: desk's count of a request's prompt, in tokens (used only for a request
            the server reported nothing for).
        estimate_reply: desk's count of a reply, in tokens (likewise; default
            :func:`reply_tokens` at the default ratio).
    """

    def __init__(
        self,
        estimate_prompt: Callable[[list[ChatMessage]], int],
        estimate_reply: Callable[[Completion], int] = reply_tokens,
    ) -> None:
        self._estimate_prompt = estimate_prompt
        self._estimate_reply = estimate_reply
        self._open: list[ChatMessage] | None = None
        self._refused = False  # the server refused the open request; not sent again yet
        self.total = TokenUsage()
        """What the requests answered so far add up to."""

    def sent(self, messages: list[ChatMessage]) -> None:
        """A request with ``messages`` is about to be sent."""
        self._open = messages
        self._refused = False

    def refused(self) -> None:
        """The server refused the open request (an error status, nothing answered: a 429 or
        a 503 to retry, a context-size 400 to send smaller): it costs nothing unless it is
        sent again (:meth:`resent`), whatever ends the wait meanwhile."""
        self._refused = True

    def resent(self) -> None:
        """The open request is sent again after a refusal: it counts as any other."""
        self._refused = False

    def answered(self, reply: Completion, *, refused: bool = False) -> None:
        """The open request ended with ``reply`` (whole, or what arrived before a stop or a
        failure); nothing happens when no request is open. ``refused``: the server answered
        nothing (a 4xx), so it is not counted."""
        messages, self._open = self._open, None
        refused, self._refused = refused or self._refused, False
        if messages is None or refused:
            return
        if reply.usage is not None:
            self.total = self.total.plus(TokenUsage.reported(reply.usage))
            return
        estimate = TokenUsage.estimate(self._estimate_prompt(messages), self._estimate_reply(reply))
        self.total = self.total.plus(estimate)
