"""What a child agent's outcome says: to its parent (the tool result, the steer's text) and to
the frontends (``child.complete``)."""

from __future__ import annotations

from agent.events import TurnResult
from agent.outcome import TurnStatus
from agent.stops import Issuer
from agent.tools.base import ToolResult
from agent.usage import TokenUsage
from contract.kinds import ChildDelivery
from contract.steer_events import ChildCompleted
from tui_gateway.sessions.state import Turn
from tui_gateway.stops.routes import receipt


def outcome_text(result: TurnResult) -> str:
    """What a child's outcome says to its parent: its answer, or why it has none."""
    partial = f"\n\nits partial answer:\n{result.text}" if result.text else ""
    stop = result.stop
    if result.status == TurnStatus.COMPLETED:
        return result.text or "(the child agent gave no answer)"
    if stop is not None and stop.issuer is Issuer.USER:
        return f"the person stopped the child agent{partial}"
    if stop is not None:
        return f"the system stopped the child agent: {stop.reason}{partial}"
    if result.status == TurnStatus.MAX_ITERATIONS:
        return f"the child agent ran out of model calls ({result.exit_reason}){partial}"
    return f"the child agent failed: {result.error or result.exit_reason}{partial}"


def tool_result_of(child: Turn, result: TurnResult) -> ToolResult:
    """The ``delegate`` call's result for a foreground child's outcome."""
    text = outcome_text(result)
    if result.status == TurnStatus.COMPLETED:
        return ToolResult(content=text)
    return ToolResult.error(text)


def completed_event(
    child: Turn, delivery: ChildDelivery, session_usage: TokenUsage | None = None
) -> ChildCompleted:
    """The ``child.complete`` payload of an ended child (its outcome booked), with the
    session's requests summed now (``session_usage``, None: not known)."""
    result = child.result
    link = child.child
    assert result is not None and link is not None
    usage = result.usage
    return ChildCompleted(
        turn_id=child.turn_id,
        parent_turn_id=link.parent_turn_id,
        status=result.status,
        exit_reason=result.exit_reason,
        text=result.text,
        delivery=delivery,
        stop=receipt(child),
        error=result.error,
        prompt_tokens=usage.prompt_tokens if usage else None,
        completion_tokens=usage.completion_tokens if usage else None,
        elapsed_s=child.worker_s,
        undelivered=tuple(s.steer_id for s in result.undelivered),
        session_usage=session_usage,
    )


__all__ = ["completed_event", "outcome_text", "tool_result_of"]
