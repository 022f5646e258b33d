"""Before each model call: the well-formed request, checked against the window, or nothing.

:func:`prepare_request` builds the request from the transcript (:mod:`agent.context.shape`),
counts it with the session's calibration and checks that prompt plus reply fit the window
(:mod:`agent.context.budget`). Near or past the limit it asks the server for its own count
(llama.cpp's ``/tokenize``) once; a request that still does not fit has its largest tool
results cut to a head and a tail (in the request only; the transcript keeps them whole); one
that cannot fit even then is not sent: :class:`agent.provider.errors.RequestTooLarge` carries
the figures.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agent.context.budget import ContextBudget, RequestFit
from agent.context.calibration import CountSource
from agent.context.shape import well_formed
from agent.context.shrink import shrink_tool_results
from agent.provider.errors import RequestTooLarge
from agent.provider.types import ChatMessage
from agent.tokens import MESSAGE_OVERHEAD_TOKENS, request_size

ServerCount = Callable[[str], Awaitable[int | None]]
"""Asks the server how many tokens a text is (None: it cannot say)."""

NEAR_LIMIT = 0.9
"""Share of the window past which the server is asked for its own count."""


@dataclass(frozen=True, slots=True)
class PreparedRequest:
    """What to send.

    Attributes:
        messages: the request's messages.
        max_tokens: the reply cap to send (None: the server's own).
        fit: the figures of the check (None without a budget).
    """

    messages: list[ChatMessage]
    max_tokens: int | None
    fit: RequestFit | None


def request_text(messages: Sequence[ChatMessage], tools: Sequence[dict[str, Any]]) -> str:
    """The text a server tokenizes for a request: its messages and tool definitions."""
    parts = [m.content for m in messages]
    parts += [f"{c.name} {c.arguments}" for m in messages for c in m.tool_calls]
    if tools:
        parts.append(json.dumps(list(tools), separators=(",", ":")))
    return "\n".join(parts)


def _near_limit(fit: RequestFit) -> bool:
    return fit.prompt_tokens + fit.headroom + fit.reserve > NEAR_LIMIT * fit.window


async def prepare_request(
    messages: Sequence[ChatMessage],
    tools: Sequence[dict[str, Any]],
    *,
    budget: ContextBudget | None,
    max_tokens: int | None,
    server_count: ServerCount | None = None,
) -> PreparedRequest:
    """The request to send for ``messages``, fitted to the budget's window.

    Args:
        messages: the transcript so far (this turn's messages included).
        tools: the tool definitions the request offers.
        budget: the session's window and calibration; None sends the request unchecked.
        max_tokens: the caller's own cap on the reply, if any.
        server_count: asks the server for its count of a text (llama.cpp ``/tokenize``).

    Returns:
        the messages and ``max_tokens`` to send.

    Raises:
        RequestTooLarge: prompt and reply cannot fit the window; nothing may be sent.
        asyncio.CancelledError: when the turn is stopped while the server counts.
    """
    request = well_formed(messages)
    if budget is None:
        return PreparedRequest(request, max_tokens, None)
    fit = budget.fit(request, tools, max_tokens=max_tokens)
    if _near_limit(fit) and server_count is not None and budget.tokenize_supported is not False:
        counted = await server_count(request_text(request, tools))
        budget.tokenize_supported = counted is not None
        if counted is not None:
            size = request_size(request, tools)
            tokens = counted + MESSAGE_OVERHEAD_TOKENS * size.messages
            budget.observe(size, tokens, CountSource.TOKENIZE)
            fit = budget.fit(request, tools, max_tokens=max_tokens)
    if not fit.fits:
        request, _saved = shrink_tool_results(request, fit.over_by, budget.calibration)
        fit = budget.fit(request, tools, max_tokens=max_tokens)
    if not fit.fits:
        raise RequestTooLarge(
            prompt_tokens=fit.prompt_tokens, reply_tokens=fit.reserve, window=fit.window
        )
    return PreparedRequest(request, fit.max_tokens, fit)
