"""One model call of a turn: fit the request, send it, retry what may be retried, calibrate.

Before anything is sent the request is built well formed and checked against the session's
window (:func:`agent.context.request.prepare_request`): one that cannot fit raises
:class:`agent.provider.errors.RequestTooLarge` and nothing goes out. The reply's
``usage.prompt_tokens`` calibrates the session's count. A context-size 400 carries the
server's own count of the request: the calibration (and, where the server named it, the window)
is corrected and the call is prepared and sent once more; a second one is raised. A 429, or a
503, is retried after its ``Retry-After`` (a stop wakes the wait).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agent.context.budget import ContextBudget
from agent.context.calibration import CountSource
from agent.context.request import FitPolicy, PreparedRequest, prepare_request
from agent.events import AgentListener, ModelCallStarted, Retrying, TextDelta, TurnTimings
from agent.provider.client import ChatClient
from agent.provider.connection import ProviderConnection
from agent.provider.errors import ContextOverflow, RateLimited, ServerError
from agent.provider.tokenize import ServerTokens, server_request_count
from agent.provider.types import ChatMessage, Completion, StreamDelta
from agent.stream_batch import DeltaBatcher
from agent.usage import UsageTally, reply_chars


@dataclass(frozen=True, slots=True)
class ModelCallSettings:
    """How an agent calls its model (the agent's settings at the time of the call).

    Attributes:
        client: the provider client.
        stream: stream the reply (True) or ask for one body.
        max_retries: retries of a 429 or 503.
        max_retry_wait_s: longest wait honoured for one retry, in seconds.
        delta_interval_s: least time between two ``TextDelta`` events, in seconds.
        max_tokens: the agent's own cap on the reply (tokens), if any.
        context: the session's budget, or None to send unchecked.
        tools: the tool definitions offered.
        policy: when the server counts a request, and the least room its reply must have.
    """

    client: ChatClient
    stream: bool
    max_retries: int
    max_retry_wait_s: float
    delta_interval_s: float
    max_tokens: int | None
    context: ContextBudget | None
    tools: Sequence[dict[str, Any]]
    policy: FitPolicy = FitPolicy()


class ModelCall:
    """One call of the model (with its retries), on the turn's event loop.

    Args:
        settings: the agent's settings.
        listener: receives ``ModelCallStarted``, ``Retrying`` and ``TextDelta`` events.
        on_activity: called whenever something arrives from the server (the inactivity watch):
            every chunk, a tool call's pieces included.
        tally: the turn's usage, told when the server refuses the request (a 429 or 503 to
            retry, a context-size 400) and when it is sent again: a refused request that is
            not sent again (a stop in the wait) costs nothing.
    """

    def __init__(
        self,
        settings: ModelCallSettings,
        *,
        listener: AgentListener,
        on_activity: Callable[[], None],
        tally: UsageTally | None = None,
    ) -> None:
        self.settings = settings
        self._listener = listener
        self._on_activity = on_activity
        self._tally = tally

    async def run(
        self,
        conn: ProviderConnection,
        messages: list[ChatMessage],
        reply: Completion,
        timings: TurnTimings,
        iteration: int,
    ) -> Completion:
        """Make the call; ``reply`` is filled in as the stream arrives.

        Returns:
            the completed reply.

        Raises:
            ProviderError: a subclass for each failure; ``RequestTooLarge`` when nothing
                could be sent.
            asyncio.CancelledError: when the turn is stopped.
        """
        settings = self.settings

        def emit(delta: StreamDelta) -> None:
            self._listener(TextDelta(delta.content, delta.reasoning, delta.pieces))

        batch = DeltaBatcher(emit, asyncio.get_running_loop(), interval_s=settings.delta_interval_s)

        def on_delta(delta: StreamDelta) -> None:
            now = time.monotonic()
            self._on_activity()
            if timings.first_token_at is None:
                timings.first_token_at = now
            batch.add(delta)

        prepared = await self._prepare(conn, messages)
        attempt, overflowed = 0, False
        while True:
            self._listener(ModelCallStarted(iteration=iteration))
            self._on_activity()
            try:
                got = await self._send(conn, prepared, reply, on_delta, batch)
                self._calibrate(prepared, got)
                return got
            except ContextOverflow as exc:
                if overflowed or settings.context is None or reply.content:
                    raise
                overflowed = True  # the server's count corrects the calibration: once more
                self._refused()
                self._learn_overflow(prepared, exc)
                prepared = await self._prepare(conn, messages)
            except (RateLimited, ServerError) as exc:
                retryable = isinstance(exc, RateLimited) or exc.status == 503
                if not retryable or attempt >= settings.max_retries or reply.content:
                    raise
                attempt += 1
                wait = exc.retry_after
                delay = min(settings.max_retry_wait_s, wait if wait is not None else 2.0**attempt)
                self._refused()
                self._listener(Retrying(delay_s=delay, message=exc.message))
                await asyncio.sleep(delay)
            if self._tally is not None:
                self._tally.resent()

    def _refused(self) -> None:
        """The server refused the request and answered nothing: until it is sent again, it
        costs nothing."""
        if self._tally is not None:
            self._tally.refused()

    async def _prepare(
        self, conn: ProviderConnection, messages: list[ChatMessage]
    ) -> PreparedRequest:
        settings = self.settings

        async def count(
            request: Sequence[ChatMessage], tools: Sequence[dict[str, Any]], templates: bool
        ) -> ServerTokens | None:
            return await server_request_count(
                conn.http, settings.client.config, request, tools, templates=templates
            )

        return await prepare_request(
            messages,
            settings.tools,
            budget=settings.context,
            max_tokens=settings.max_tokens,
            server_count=count,
            policy=settings.policy,
        )

    async def _send(
        self,
        conn: ProviderConnection,
        prepared: PreparedRequest,
        reply: Completion,
        on_delta: Callable[[StreamDelta], None],
        batch: DeltaBatcher,
    ) -> Completion:
        settings = self.settings
        if settings.stream:
            try:
                return await settings.client.stream(
                    conn,
                    prepared.messages,
                    on_delta,
                    tools=prepared.tools,
                    partial=reply,
                    max_tokens=prepared.max_tokens,
                    on_chunk=self._on_activity,
                )
            finally:
                batch.flush()  # what is held goes out before any later event
        got = await settings.client.complete(
            conn, prepared.messages, tools=prepared.tools, max_tokens=prepared.max_tokens
        )
        if got.content or got.reasoning:
            on_delta(StreamDelta(content=got.content, reasoning=got.reasoning))
            batch.flush()
        return got

    def _calibrate(self, prepared: PreparedRequest, got: Completion) -> None:
        """The reply's usage is the server's count of the request it answered, and, with
        the reply's own tokens, of what the next request carries before what is added."""
        context = self.settings.context
        usage = got.usage
        if context is None or usage is None or usage.prompt_tokens <= 0:
            return
        context.observe_request(
            prepared.messages, prepared.tools, usage.prompt_tokens, CountSource.USAGE
        )
        reply = ChatMessage("assistant", got.content, tool_calls=tuple(got.tool_calls))
        context.observe_reply(
            prepared.messages, prepared.tools, reply, usage.prompt_tokens + kept_tokens(got)
        )

    def _learn_overflow(self, prepared: PreparedRequest, exc: ContextOverflow) -> None:
        """A context-size 400: its counts are the server's, for exactly this request."""
        context = self.settings.context
        assert context is not None
        if exc.window is not None:
            context.learn_from_server(exc.window, "the server's context-size answer")
        if exc.prompt_tokens is not None:
            context.observe_request(
                prepared.messages, prepared.tools, exc.prompt_tokens, CountSource.OVERFLOW
            )


def kept_tokens(reply: Completion) -> int:
    """The completion tokens of ``reply`` that stay in the conversation: all of them, but for
    its reasoning (not sent again), whose share of the characters is taken off."""
    usage = reply.usage
    tokens = usage.completion_tokens if usage is not None else 0
    if not reply.reasoning or tokens <= 0:
        return max(0, tokens)
    kept = reply_chars(reply) - len(reply.reasoning)
    return round(tokens * kept / max(1, kept + len(reply.reasoning)))
