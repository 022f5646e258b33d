"""Human text for stop receipts, failures and durations, as shown in the transcript.

Pure functions, so the app can take another formatter (tests pin the figures this way).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from agent.stops import YOU_STOPPED
from agent.usage import TokenUsage
from contract.events import StopReceipt

ReceiptFormatter = Callable[[StopReceipt], str]
"""Turns a stop receipt into the one-line marker shown under a stopped turn."""


def format_ms(ms: float) -> str:
    """Milliseconds as short text: ``"<1 ms"``, ``"12 ms"``, ``"1.3 s"``."""
    if ms < 1.0:
        return "<1 ms"
    if ms < 1000.0:
        return f"{ms:.0f} ms"
    return f"{ms / 1000.0:.1f} s"


def format_elapsed(seconds: float) -> str:
    """Seconds of a running turn: ``"0.4 s"``, ``"12.0 s"``, ``"2 m 05 s"``."""
    seconds = max(0.0, seconds)
    if seconds < 60.0:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes} m {rest:02d} s"


def format_stop_receipt(receipt: StopReceipt) -> str:
    """The marker under a stopped turn.

    Args:
        receipt: the gateway's measurements of the stop.

    Returns:
        e.g. ``"■ stopped by you · connection closed in 3 ms · worker exited in 5 ms"``,
        ``"■ stopped by you · shell (pid 4242) ended in 12 ms · worker exited in 14 ms"`` for
        a stop during a tool (no connection was open), or
        ``"■ stopped by the system: desk is shutting down · ..."``.
    """
    if receipt.issuer == "user":
        parts = [f"■ {YOU_STOPPED}"]
    else:
        parts = [f"■ stopped by the system: {receipt.reason}"]
    parts.extend(stop_figures(receipt))
    if receipt.children_ended:
        noun = "process" if receipt.children_ended == 1 else "processes"
        parts.append(f"{receipt.children_ended} child {noun} ended")
    if receipt.usage is not None:
        parts.append(usage_phrase(receipt.usage))
    return " · ".join(parts)


def usage_phrase(usage: TokenUsage) -> str:
    """A turn's tokens in a receipt: ``1,234 in / 56 out tokens``, then ``(estimated)`` when
    desk counted them all (the server reported nothing before the stop) or ``(partly
    estimated)`` when some; ``no tokens used`` when no request counted (the server refused
    each one the turn made)."""
    if not usage.requests:
        return "no tokens used"
    text = f"{usage.prompt_tokens:,} in / {usage.completion_tokens:,} out tokens"
    if usage.estimated_requests and usage.estimated_requests == usage.requests:
        return text + " (estimated)"
    return text + (" (partly estimated)" if usage.estimated else "")


def stop_figures(receipt: StopReceipt) -> list[str]:
    """What a stop measured, each part a short phrase: the tool it ended (and how fast its
    process went), the connection it closed, a compression rolled back, the worker exit."""
    parts: list[str] = []
    if receipt.tool is not None:
        if receipt.tool_pid is not None and receipt.tool_ended_ms is not None:
            took = format_ms(receipt.tool_ended_ms)
            parts.append(f"{receipt.tool} (pid {receipt.tool_pid}) ended in {took}")
        else:
            parts.append(f"during {receipt.tool}")
    if receipt.closed_ms is not None:
        parts.append(f"connection closed in {format_ms(receipt.closed_ms)}")
    if receipt.rolled_back_ms is not None:
        parts.append(f"rolled back in {format_ms(receipt.rolled_back_ms)}")
    if receipt.exited_ms is not None:
        parts.append(f"worker exited in {format_ms(receipt.exited_ms)}")
    return parts


FAILURE_MARK = "✖ "
"""How the error line of a failed turn begins."""


def format_failure(error: str | None, exit_reason: str) -> str:
    """The one error line of a failed turn: ``"✖ <error>"`` (the exit reason if no message)."""
    text = " ".join((error or exit_reason).split())
    return f"{FAILURE_MARK}{text}"


class Outcome(Protocol):
    """How a turn or a child agent ended: ``message.complete`` and ``child.complete``."""

    @property
    def status(self) -> str:
        """``completed``, ``interrupted``, ``failed`` or ``max_iterations``."""
        ...

    @property
    def exit_reason(self) -> str:
        """The exit reason (``interrupted_by_user``, ``failed(<error class>)``...)."""
        ...

    @property
    def stop(self) -> StopReceipt | None:
        """The receipt of the stop that ended it, if one did."""
        ...

    @property
    def error(self) -> str | None:
        """One line for a failure."""
        ...


def note_for(outcome: Outcome, format_receipt: ReceiptFormatter) -> str:
    """The line under a finished reply or child agent.

    Args:
        outcome: how it ended.
        format_receipt: how a stop receipt reads.

    Returns:
        the stop receipt, the error line, ``"■ <exit reason>"`` for another end that is not
        a completion, or "" when it completed.
    """
    if outcome.status == "interrupted" and outcome.stop is not None:
        return format_receipt(outcome.stop)
    if outcome.status == "failed":
        return format_failure(outcome.error, outcome.exit_reason)
    if outcome.status != "completed":
        return f"■ {outcome.exit_reason}"
    return ""
