"""A turn's one terminal outcome, made from where the turn ended: stopped, failed, out of
iterations, or done.

:class:`~agent.agent.Agent` runs the turn; these make its :class:`~agent.events.TurnResult`
from what the turn holds then: the reply being read (a :class:`Completion`, possibly
half-streamed) and the messages the turn added after the user message. A reply's final message
is its text only, never half-streamed tool calls.
"""

from __future__ import annotations

from agent.events import TurnResult
from agent.outcome import ExitReason, TurnStatus
from agent.provider.errors import ProviderError
from agent.provider.types import ChatMessage, Completion
from agent.stops import StopRequest
from agent.usage import TokenUsage


def reply_messages(reply: Completion) -> list[ChatMessage]:
    """The final assistant message of a turn: its text only (``[]`` when it has none)."""
    if not reply.content:
        return []
    return [ChatMessage(role="assistant", content=reply.content)]


def interrupted(
    stop: StopRequest,
    reply: Completion,
    added: list[ChatMessage],
    usage_total: TokenUsage | None = None,
    children_ended: int = 0,
    iterations: int = 0,
) -> TurnResult:
    """The outcome of a turn ``stop`` ended: ``interrupted``, partial, with what it had added
    and the reply's text so far; ``usage_total`` (None: none counted), ``children_ended`` and
    ``iterations`` (model requests begun) as the turn counted them."""
    result = TurnResult(
        status=TurnStatus.INTERRUPTED,
        exit_reason=stop.exit_reason(),
        text=reply.content,
        reasoning=reply.reasoning,
        messages=added + reply_messages(reply),
        partial=True,
        stop=stop,
        usage=reply.usage,
    )
    if usage_total is not None:
        result.usage_total = usage_total
    result.children_ended = children_ended
    result.iterations = iterations
    return result


def ended(
    reply: Completion,
    added: list[ChatMessage],
    *,
    error: ProviderError | None,
    out_of_iterations: bool,
    max_iterations: int,
    usage_total: TokenUsage,
    children_ended: int,
    iterations: int,
) -> TurnResult:
    """The outcome of a turn no stop ended: ``failed`` (``error``, the reply's text kept as
    partial), ``max_iterations`` (``out_of_iterations``: the last reply is not a final one), or
    ``completed``.

    Args:
        reply: the last reply read.
        added: the messages the turn added after the user message (tool calls and results).
        error: the provider error that ended the turn, or None.
        out_of_iterations: the turn used its ``max_iterations`` model calls.
        max_iterations: the agent's bound, named in the exit reason.
        usage_total: the turn's requests summed.
        children_ended: child processes its tools left that were ended.
        iterations: how many model calls the turn made.
    """
    if error is not None:
        status, exit_reason = TurnStatus.FAILED, ExitReason.failed(type(error).__name__)
    elif out_of_iterations:
        status = TurnStatus.MAX_ITERATIONS
        exit_reason = ExitReason.max_iterations(max_iterations)
    else:
        status, exit_reason = TurnStatus.COMPLETED, ExitReason.completed()
    final = [] if out_of_iterations else reply_messages(reply)
    return TurnResult(
        status=status,
        exit_reason=exit_reason,
        text=reply.content,
        reasoning=reply.reasoning,
        messages=added + final,
        partial=error is not None and bool(reply.content),
        error=error.message if error is not None else None,
        failure=error,
        usage=reply.usage,
        usage_total=usage_total,
        children_ended=children_ended,
        iterations=iterations,
        finish_reason=reply.finish_reason if status == TurnStatus.COMPLETED else None,
    )
