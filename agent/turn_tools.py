"""A turn's tool calls as agent events: the batch that runs them, and each call's one result."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from agent.events import AgentListener, ToolCompleted, ToolOutput, ToolStarted
from agent.provider.types import ToolCall
from agent.scope import InterruptScope
from agent.tools.base import DEFAULT_MAX_OUTPUT_BYTES, ToolResult
from agent.tools.changes import ChangeRecorder
from agent.tools.process import ProcessLedger
from agent.tools.registry import ToolRegistry
from agent.tools.runner import Approver, ToolBatch
from agent.tools.workspace import Workspace


def tool_completed(call: ToolCall, result: ToolResult) -> ToolCompleted:
    """The ``ToolCompleted`` event of a call's one result (a stop named by its party)."""
    stopped_by = result.stopped_by.describe() if result.stopped_by is not None else None
    return ToolCompleted(
        call_id=call.id,
        name=call.name,
        content=result.content,
        is_error=result.is_error,
        exit_code=result.exit_code,
        stopped_by=stopped_by,
        children_ended=result.children_ended,
    )


RESULT_SHARE = 0.25
"""Share of the window one tool result may take (kept to its head and tail past it)."""

RESULT_BYTES_PER_TOKEN = 2
"""Bytes a token of tool output is taken to hold when sizing a result: output is denser than
prose (numbers, hashes, paths run about 2 bytes a token), and the size must not move with the
session's calibration (a result is cut once, when it is made: its request stays the same)."""

MIN_RESULT_BYTES = 1024
"""The least a tool result keeps, however small the window."""


def tool_result_bytes(window: int | None) -> int:
    """The budget of one tool result in a window of ``window`` tokens (UTF-8 bytes).

    A quarter of the window at `RESULT_BYTES_PER_TOKEN` bytes a token, at least
    `MIN_RESULT_BYTES` and at most the tools' own default
    (:data:`agent.tools.base.DEFAULT_MAX_OUTPUT_BYTES`, also for None: no window known):
    2,048 bytes on a 4,096-token window, 32,000 from a 64,000-token one up. A longer output keeps
    its head and tail around a marker saying how much was cut, in the transcript too: the
    model is never sent more of it, and the gauge and compression count what it is sent.
    """
    if window is None:
        return DEFAULT_MAX_OUTPUT_BYTES
    share = int(window * RESULT_SHARE * RESULT_BYTES_PER_TOKEN)
    return max(MIN_RESULT_BYTES, min(DEFAULT_MAX_OUTPUT_BYTES, share))


def tool_batch(
    tools: ToolRegistry,
    calls: Sequence[ToolCall],
    listener: AgentListener,
    *,
    cwd: Path,
    ledger: ProcessLedger,
    approve: Approver | None,
    workspace: Workspace | None,
    changes: ChangeRecorder | None = None,
    stops: InterruptScope | None = None,
    window: int | None = None,
) -> ToolBatch:
    """The batch that runs one assistant message's ``calls``, reporting to ``listener``.

    Args:
        tools: the turn's tools.
        calls: the calls, in order.
        listener: gets ``ToolStarted``, ``ToolOutput`` and ``ToolCompleted`` events.
        cwd: where the calls run.
        ledger: the turn's process ledger.
        approve: asks the person before a call that needs it (None: run every call).
        workspace: the file tools' boundary (None: one at ``cwd``).
        changes: the turn's checkpoint recorder (None: nothing is recorded).
        stops: the turn's scope, handed to each call (:attr:`ToolContext.stops`).
        window: the session's context window in tokens, which sizes each result
            (`tool_result_bytes`); None: no window known.
    """

    def on_start(call: ToolCall) -> None:
        listener(ToolStarted(call_id=call.id, name=call.name, arguments=call.arguments))

    def on_output(call: ToolCall, text: str) -> None:
        listener(ToolOutput(call_id=call.id, text=text))

    def on_complete(call: ToolCall, result: ToolResult) -> None:
        listener(tool_completed(call, result))

    return ToolBatch(
        tools,
        calls,
        cwd=cwd,
        ledger=ledger,
        on_start=on_start,
        on_output=on_output,
        on_complete=on_complete,
        approve=approve,
        workspace=workspace,
        changes=changes,
        stops=stops,
        max_output_bytes=tool_result_bytes(window),
    )


__all__ = ["tool_batch", "tool_completed", "tool_result_bytes"]
