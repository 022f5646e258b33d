"""Before each model call: the well-formed request, checked against the window, or nothing.

:func:`prepare_request` builds the request from the transcript (:mod:`agent.context.shape`),
counts it with the session's calibration and checks that prompt plus reply fit the window
(:mod:`agent.context.budget`). When the estimate puts it within a margin of the window (past
`NEAR_LIMIT` of it), the server counts the request itself: exactly where it can render it with
its own chat template (llama.cpp's ``/apply-template`` and ``/tokenize``), and then the request
is sent when a minimum reply fits, with ``max_tokens`` set to what is left; a server that only
tokenizes calibrates the estimate. A request that still does not fit has its largest tool
results cut to a head and a tail, harder until it fits (in the request only; the transcript
keeps them whole), and is counted again; one that cannot fit even then is not sent:
:class:`agent.provider.errors.RequestTooLarge` carries the figures. A caller's
:class:`FitPolicy` may have the server count every request, and ask more room for the reply
than the usual reserve (a compression's summary call: its whole budget).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agent.context.budget import ContextBudget, RequestFit
from agent.context.calibration import CountSource
from agent.context.shape import well_formed
from agent.context.shrink import cut_tool_results_to_fit
from agent.provider.errors import RequestTooLarge
from agent.provider.tokenize import ServerTokens
from agent.provider.types import ChatMessage
from agent.tokens import MESSAGE_OVERHEAD_TOKENS

ServerCount = Callable[
    [Sequence[ChatMessage], Sequence[dict[str, Any]], bool], Awaitable[ServerTokens | None]
]
"""Asks the server for its count of a request: ``(messages, tools, templates)`` (see
:func:`agent.provider.tokenize.server_request_count`); None: it cannot say."""

NEAR_LIMIT = 0.9
"""Share of the window past which the server is asked for its own count."""


@dataclass(frozen=True, slots=True)
class FitPolicy:
    """How a caller's requests are fitted (the defaults are a turn's).

    Attributes:
        count_share: share of the window past which (by the estimate) the server counts the
            request itself; 0 has it count every request it can (a compression's summary
            call: it reads as much as the window allows, of text whose characters a token
            may be far from the session's).
        reply_at_least: the least room the reply must have (tokens), when more than the
            usual reserve: a summary call's whole budget.
    """

    count_share: float = NEAR_LIMIT
    reply_at_least: int = 0


@dataclass(frozen=True, slots=True)
class PreparedRequest:
    """What to send.

    Attributes:
        messages: the request's messages.
        max_tokens: the reply cap to send (None: the server's own).
        fit: the figures of the check (None without a budget).
        tools: the tool definitions to send (compact on a small window, see
            :meth:`agent.context.budget.ContextBudget.offered`).
    """

    messages: list[ChatMessage]
    max_tokens: int | None
    fit: RequestFit | None
    tools: Sequence[dict[str, Any]] = ()


def _near_limit(fit: RequestFit, share: float) -> bool:
    return fit.prompt_tokens + fit.headroom + fit.reserve > share * fit.window


async def prepare_request(
    messages: Sequence[ChatMessage],
    tools: Sequence[dict[str, Any]],
    *,
    budget: ContextBudget | None,
    max_tokens: int | None,
    server_count: ServerCount | None = None,
    policy: FitPolicy = FitPolicy(),
) -> PreparedRequest:
    """The request to send for ``messages``, fitted to the budget's window.

    Args:
        messages: the transcript so far (this turn's messages included).
        tools: the tool definitions the request offers (whole: the budget sends them compact
            on a small window).
        budget: the session's window and calibration; None sends the request unchecked.
        max_tokens: the caller's own cap on the reply, if any.
        server_count: asks the server for its count of a text (llama.cpp ``/tokenize``).
        policy: when the server counts, and the least room the reply must have.

    Returns:
        the messages and ``max_tokens`` to send.

    Raises:
        RequestTooLarge: prompt and reply cannot fit the window; nothing may be sent.
        asyncio.CancelledError: when the turn is stopped while the server counts.
    """
    request = well_formed(messages)
    if budget is None:
        return PreparedRequest(request, max_tokens, None, tools)
    sent = budget.offered(tools)
    least = policy.reply_at_least
    fit = budget.fit(request, tools, max_tokens=max_tokens, reply_at_least=least)
    if _near_limit(fit, policy.count_share):
        fit = await _server_fit(request, tools, budget, max_tokens, server_count, fit, least)
    whole, need, rounds = request, 0, 0
    while not fit.fits and rounds < _CUT_ROUNDS:  # each round cuts the whole results again
        rounds += 1
        need += max(1, fit.over_by)
        shorter, saved = cut_tool_results_to_fit(whole, need, budget.calibration)
        if saved <= 0 or shorter == request:
            break
        request = shorter
        fit = budget.fit(request, tools, max_tokens=max_tokens, reply_at_least=least)
        if _near_limit(fit, policy.count_share):
            fit = await _server_fit(request, tools, budget, max_tokens, server_count, fit, least)
    if not fit.fits:
        raise RequestTooLarge(
            prompt_tokens=fit.prompt_tokens, reply_tokens=fit.reserve, window=fit.window
        )
    return PreparedRequest(request, fit.max_tokens, fit, sent)


_CUT_ROUNDS = 3
"""Rounds of cutting tool results (each counted again) before a request is given up."""


async def _server_fit(
    request: list[ChatMessage],
    tools: Sequence[dict[str, Any]],
    budget: ContextBudget,
    max_tokens: int | None,
    server_count: ServerCount | None,
    estimate: RequestFit,
    least: int,
) -> RequestFit:
    """The fit by the server's own count where it gives one, else ``estimate`` (the reply
    has at least ``least`` tokens of room, when more than the usual reserve)."""
    if server_count is None or budget.tokenize_supported is False:
        return estimate
    sent = budget.offered(tools)
    counted = await server_count(request, sent, budget.template_supported is not False)
    budget.tokenize_supported = counted is not None
    if counted is None:
        return estimate
    size = counted.size(request, sent)
    if counted.exact and sent:
        budget.tools_rendered = not counted.tools_left_out
    if counted.exact:
        budget.template_supported = True
        budget.observe(size, counted.tokens, CountSource.TOKENIZE)
        return budget.fit_exact(counted.tokens, max_tokens=max_tokens, reply_at_least=least)
    budget.template_supported = False
    tokens = counted.tokens + MESSAGE_OVERHEAD_TOKENS * size.messages
    budget.observe(size, tokens, CountSource.TOKENIZE)
    return budget.fit(request, tools, max_tokens=max_tokens, reply_at_least=least)
