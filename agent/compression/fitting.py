"""A summary call that fits its window: its request is read shorter until the summary has room.

A compression's plan sizes what each summary call reads by the session's calibrated count
(:mod:`agent.compression.plan`). That count is a mean over what the server counted so far, and
the text a summary call reads (a tool's output, code, a listing) may have far fewer characters a
token than the prose that calibrated it: a request planned at 60 % of the window can need more
than all of it. So each request is checked here first, by the estimate, with the summary's whole
budget as the room its reply needs; then the agent has the server count it where the server can
(every summary request, :class:`agent.context.request.FitPolicy`) and does not send it when the
server's count leaves the summary no room (a server that cannot count refuses it with a
context-size 400, which corrects the count). A request that does not fit is read shorter by
what the figures say and tried again, at most `MAX_FITS` times, never again as it was: every
part of the conversation longer than a common share (a message, a tool's output, an earlier
summary) is cut to its head and its tail with a note of what was left out
(:func:`agent.compression.template.cut_to_fit`); a message summarised on its own is cut in its
middle. Only when even the shortest reading cannot fit does the call fail, with a line about
the summary request (:class:`NotFitted`), never with advice meant for a prompt.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from agent.context.budget import ContextBudget, largest_prompt
from agent.events import TurnResult
from agent.outcome import TurnStatus
from agent.provider.errors import ContextOverflow, RequestTooLarge
from agent.provider.types import ChatMessage
from agent.tokens import MESSAGE_OVERHEAD_TOKENS

MAX_FITS = 4
"""Most times one summary call's request is read shorter after it did not fit."""

SHRINK_MARGIN = 0.9
"""A request read shorter aims this far under what its figures say would just fit."""

MIN_READ_CHARS = 200
"""Fewest characters of conversation a summary call reads; one that cannot fit with that
many fails."""

TOO_LARGE = (RequestTooLarge, ContextOverflow)
"""The failures of a request that did not fit: not sent, or refused by the server's count."""

RequestBuilder = Callable[[int | None], list[ChatMessage]]
"""Builds a summary call's request (its instructions, then its conversation) reading at most
that many characters of conversation (None: as planned)."""


@dataclass(frozen=True, slots=True)
class NotFitted:
    """A summary call whose request could not be made to fit its window.

    Attributes:
        prompt_tokens: the last request's size (tokens; the server's count where it gave
            one), or None when the server did not say.
        reply_tokens: the room the summary needs (tokens).
        window: the context window (tokens).
        refused: True when the model server itself refused the last request as too large
            (a context-size 400), False when desk's check kept it back.
    """

    prompt_tokens: int | None
    reply_tokens: int
    window: int
    refused: bool = False

    @property
    def message(self) -> str:
        """One line for the person, after ``compression failed: ``."""
        if self.refused:
            return (
                f"the model server refused its summary request as too large for its "
                f"{self.window:,}-token window, even read shorter; nothing changed"
            )
        needs = f"about {self.prompt_tokens:,} tokens" if self.prompt_tokens else "too much"
        return (
            f"its summary request needs {needs} and the summary {self.reply_tokens:,}, more "
            f"than the {self.window:,}-token window holds, even read shorter; nothing changed"
        )


def fitted_call(
    build: RequestBuilder,
    budget: int,
    context: ContextBudget,
    call: Callable[[list[ChatMessage]], TurnResult],
    stopped: Callable[[], bool],
) -> TurnResult | NotFitted | None:
    """Make one summary call whose request fits the window with ``budget`` for the summary.

    Args:
        build: builds the request, reading at most so many characters of conversation.
        budget: the summary's most tokens: the room its reply needs.
        context: the session's window and calibrated count.
        call: sends one request (on an agent that refuses, nothing sent, a request whose
            reply would have less room than ``budget``): the call's result.
        stopped: True once the compression is stopped: nothing more is tried.

    Returns:
        the result of the call that was made (completed, stopped, or failed for another
        reason than its size); `NotFitted` when no reading short enough fit; None when
        stopped before a try.
    """
    limit: int | None = None
    prompt: int | None = None
    refused = False
    for _ in range(MAX_FITS + 1):
        if stopped():
            return None
        request = build(limit)
        fit = context.fit(request, reply_at_least=budget)
        prompt, refused = fit.prompt_tokens, False
        if fit.fits:
            result = call(request)
            failure = result.failure
            if result.status != TurnStatus.FAILED or not isinstance(failure, TOO_LARGE):
                return result
            prompt, refused = failure.prompt_tokens, isinstance(failure, ContextOverflow)
        limit = shorter(request, prompt, budget, context)
        if limit is None:
            break
    return NotFitted(prompt, budget, context.window.tokens, refused)


def shorter(
    request: list[ChatMessage], prompt_tokens: int | None, budget: int, context: ContextBudget
) -> int | None:
    """The characters of conversation a request read shorter may have.

    Args:
        request: the request that did not fit: instructions first, the conversation last.
        prompt_tokens: its size by the count that refused it (None: unknown, halved).
        budget: the room the summary needs (tokens).
        context: the session's window and calibrated count.

    Returns:
        at most `SHRINK_MARGIN` of the conversation's characters now, scaled by what fits
        over what it needed; None when fewer than `MIN_READ_CHARS` would be left.
    """
    window = context.window.tokens
    measured = context.calibration.measured
    allowed = largest_prompt(window, measured=measured, reply_at_least=budget)
    fixed = context.calibration.count(request[:-1]) + MESSAGE_OVERHEAD_TOKENS
    chars = len(request[-1].content)
    scale = 0.5 if prompt_tokens is None else (allowed - fixed) / max(1, prompt_tokens - fixed)
    limit = int(chars * min(1.0, scale) * SHRINK_MARGIN)
    return limit if allowed > fixed and limit >= MIN_READ_CHARS else None
