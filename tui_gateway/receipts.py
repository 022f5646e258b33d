"""The ``message.complete`` of a turn and its stop receipt, from the gateway's measurements."""

from __future__ import annotations

from tui_gateway.events import MessageComplete, StopReceipt
from tui_gateway.state import Turn


def complete_event(turn: Turn) -> MessageComplete:
    """The ``message.complete`` payload of a finished turn, with its stop receipt.

    Raises:
        ValueError: when the turn has no booked result yet.
    """
    result = turn.result
    if result is None:
        raise ValueError(f"turn {turn.turn_id} has no outcome yet")
    receipt = None
    if result.stop is not None:
        stop = result.stop
        timings = result.timings
        closed_ms = timings.stop_to_closed_ms if timings is not None else None
        exited_ms = None
        if turn.worker_exited_at is not None:
            exited_ms = max(0.0, (turn.worker_exited_at - stop.requested_at) * 1000.0)
        receipt = StopReceipt(
            issuer=stop.issuer.value,
            surface=stop.surface.value,
            reason=stop.reason,
            closed_ms=closed_ms,
            exited_ms=exited_ms,
            children_ended=result.children_ended,
        )
    usage = result.usage
    elapsed = 0.0
    if turn.started_at is not None and turn.worker_exited_at is not None:
        elapsed = turn.worker_exited_at - turn.started_at
    return MessageComplete(
        turn_id=turn.turn_id,
        status=result.status,
        exit_reason=result.exit_reason,
        text=result.text,
        stop=receipt,
        error=result.error,
        prompt_tokens=usage.prompt_tokens if usage else None,
        completion_tokens=usage.completion_tokens if usage else None,
        elapsed_s=elapsed,
    )
