"""Running the tool calls of one assistant message so that every call gets exactly one result.

The OpenAI chat format requires every ``tool_calls[i].id`` of an assistant message to be answered
by a ``tool`` message before the next request, or the server rejects the history. A turn can be
stopped in the middle of its tool calls, so :class:`ToolBatch` keeps what it needs to answer all
of them in either case:

* it runs the calls in order; bad arguments, unknown tools, declined approvals and even a tool's
  unexpected exception become error results (``ToolResult(is_error=True)``);
* on a hard stop the awaiting task is cancelled and ``CancelledError`` propagates out of
  :meth:`ToolBatch.run` (the tool cleaned up first); the agent then calls
  :meth:`ToolBatch.stopped` to get results for every call: those that finished keep their
  result, the interrupted one gets :func:`stopped_result` with its partial output and the count
  of child processes its stop ended, and the ones never started get ``not run: stopped by ...``.

Before a file tool's call runs, the workspace boundary (:mod:`agent.tools.workspace`) looks at
the path it would touch: a path on the deny list is refused (an error result, whatever the
approvals say), a path outside the workspace asks the person even for a tool that needs no
approval, and the call then runs on the resolved path it was checked against. A tool that
plans its change first (``edit_file``, ``apply_patch``) is asked for its plan before the
approval: a change that cannot be made is refused then, without asking. Once approved, a call
that may change files hands them to the turn's :class:`~agent.tools.changes.ChangeRecorder`
first, and tells it when the call is over (ended, failed or stopped).

A tool's output and result are made valid Unicode here (:func:`agent.valid_text.valid_text`),
whatever the tool: a file name or an MCP server's text holding a lone surrogate reaches the
transcript as U+FFFD.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from agent.events import StoppedTool
from agent.provider.types import ChatMessage, ToolCall
from agent.scope import InterruptScope
from agent.stops import StopRequest
from agent.tools.base import (
    DEFAULT_MAX_OUTPUT_BYTES,
    ToolArgumentError,
    ToolContext,
    ToolResult,
    stopped_result,
)
from agent.tools.changes import ChangeRecorder, ChangesFiles, EditRefused, Finish, PlansChanges
from agent.tools.output import OutputBuffer
from agent.tools.process import ProcessLedger
from agent.tools.registry import ToolRegistry
from agent.tools.workspace import PathCheck, TouchesPath, TouchesPaths, Workspace
from agent.valid_text import valid_text

Approver = Callable[[ToolCall, dict[str, Any], str], Awaitable[bool | str]]
"""Asks whether a call may run: ``(call, args, why it asks)`` -> True to run it, False when the
person declined, or the text the model is told instead when no one was asked (a run that
refuses every call needing approval)."""
"""Asks the person whether a call may run; True to run it. Called with the call, its parsed
arguments and the reason it asks beyond its tool's ``needs_approval`` ("" when there is none;
e.g. ``read_file on /etc/hosts, outside the workspace /home/me/project``)."""

_log = logging.getLogger(__name__)


@runtime_checkable
class NotesApproval(Protocol):
    """A tool whose approval prompt says one thing more about every call (the ``shell``
    tool: the sandbox its commands run in)."""

    @property
    def approval_note(self) -> str:
        """The line shown with the call, e.g. ``sandbox: workspace-write, no network``."""
        ...


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """One tool call and its one result."""

    call: ToolCall
    result: ToolResult

    def message(self) -> ChatMessage:
        """The ``tool`` message answering the call."""
        return ChatMessage(role="tool", content=self.result.content, tool_call_id=self.call.id)


class ToolBatch:
    """Runs one assistant message's tool calls in order.

    Args:
        registry: the tools offered in the turn.
        calls: the assistant message's tool calls, in order.
        cwd: the working directory of the calls.
        ledger: the turn's process ledger (child processes ended are booked there).
        max_output_bytes: budget of each result, in UTF-8 bytes.
        on_output: ``(call, text)`` for output as it arrives; must not block.
        on_start: called with each call before it runs.
        on_complete: called with each call and its result when it has one.
        approve: asked before each call whose tool ``needs_approval`` or whose path lies
            outside the workspace; None runs them (the host already decided, e.g. a "yolo"
            mode). Awaited inside the turn, so a stop cancels the wait.
        workspace: the boundary of the file tools; None: one at ``cwd`` with the default deny
            list (:meth:`Workspace.at`).
        changes: records what files hold before a call that may change them runs (the turn's
            checkpoint, :mod:`agent.tools.changes`); None records nothing.
        stops: the turn's scope, handed to each call (:attr:`ToolContext.stops`); None: none.
    """

    def __init__(
        self,
        registry: ToolRegistry,
        calls: Sequence[ToolCall],
        *,
        cwd: Path,
        ledger: ProcessLedger | None = None,
        max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
        on_output: Callable[[ToolCall, str], None] | None = None,
        on_start: Callable[[ToolCall], None] | None = None,
        on_complete: Callable[[ToolCall, ToolResult], None] | None = None,
        approve: Approver | None = None,
        workspace: Workspace | None = None,
        changes: ChangeRecorder | None = None,
        stops: InterruptScope | None = None,
    ) -> None:
        self.registry = registry
        self.stops = stops
        self.changes = changes
        self.workspace = workspace if workspace is not None else Workspace.at(cwd)
        self.calls = list(calls)
        self.cwd = cwd
        self.ledger = ledger if ledger is not None else ProcessLedger()
        self.max_output_bytes = max_output_bytes
        self.on_output = on_output
        self.on_start = on_start
        self.on_complete = on_complete
        self.approve = approve
        self.outcomes: list[ToolOutcome] = []
        self._current: int | None = None
        self._last: tuple[ToolCall, float] | None = None  # the last call that ended, and when
        self._partial = OutputBuffer(max_output_bytes)
        self._ended_before = 0

    async def run(self) -> list[ToolOutcome]:
        """Run every call in order.

        Returns:
            one outcome per call, in call order.

        Raises:
            asyncio.CancelledError: on a hard stop (after the running tool cleaned up, or
                between two calls: a call that answered a stop is not followed by another);
                call :meth:`stopped` to answer every call.
        """
        for index in range(len(self.outcomes), len(self.calls)):
            if self.stops is not None and self.stops.cancelled:
                raise asyncio.CancelledError  # its cancel may not have reached the loop yet
            call = self.calls[index]
            self._current = index
            self._partial = OutputBuffer(self.max_output_bytes)
            self._ended_before = self.ledger.children_ended
            if self.on_start is not None:
                self.on_start(call)
            result = await self._run_one(call)
            self._current = None
            self._last = (call, time.monotonic())
            self.outcomes.append(ToolOutcome(call, result))
            if self.on_complete is not None:
                self.on_complete(call, result)
        return list(self.outcomes)

    async def _run_one(self, call: ToolCall) -> ToolResult:
        try:
            return await self._check_and_run(call)
        except Exception as exc:  # a check's bug (or a tool's) must still answer the call
            _log.exception("the %s call %s failed", call.name, call.id)
            return ToolResult.error(valid_text(f"{call.name} failed: {type(exc).__name__}: {exc}"))

    async def _check_and_run(self, call: ToolCall) -> ToolResult:
        try:
            tool = self.registry.get(call.name)
            args = self.registry.parse_arguments(call.arguments, call.name)
        except ToolArgumentError as exc:
            return ToolResult.error(f"{exc}; the call was not run, fix it and call again")
        checks: list[PathCheck] = []
        if isinstance(tool, TouchesPath):
            checks = [self.workspace.check(tool.path_argument(args), self.cwd)]
            args = {**args, "path": str(checks[0].path)}  # run on what was checked
        elif isinstance(tool, TouchesPaths):
            try:
                paths = tool.path_arguments(args)
            except ToolArgumentError as exc:
                return ToolResult.error(f"{exc}; the call was not run, fix it and call again")
            checks = [self.workspace.check(path, self.cwd) for path in paths]
        denied = next((c for c in checks if c.verdict == "denied"), None)
        if denied is not None:
            return ToolResult.error(denied.reason(call.name))
        if isinstance(tool, PlansChanges):  # a change that cannot be made is never asked
            try:  # (it only reads: a stop meanwhile need not wait for it)
                await asyncio.to_thread(tool.plan, args, self.cwd)
            except EditRefused as exc:
                return ToolResult.error(str(exc))
            except Exception as exc:  # a tool bug must still answer the call
                return ToolResult.error(f"{call.name} failed: {type(exc).__name__}: {exc}")
        outside = [c for c in checks if c.verdict == "outside"]
        if (tool.needs_approval or outside) and self.approve is not None:
            reason = "; ".join(c.reason(call.name) for c in outside)
            if not reason and isinstance(tool, NotesApproval):
                reason = tool.approval_note  # e.g. the sandbox a shell command runs in
            verdict = await self.approve(call, args, reason)
            if verdict is not True:
                if isinstance(verdict, str) and verdict:
                    return ToolResult.error(verdict)
                return ToolResult.error(f"the person declined to run this {call.name} call")
        finish: Finish | None = None
        if self.changes is not None and isinstance(tool, ChangesFiles):
            # A stop meanwhile does not wait for the record (the call will not run).
            changed = tool.changed_paths(args, self.cwd)
            finish = await asyncio.to_thread(self.changes.before, changed)

        def tee(text: str) -> None:
            text = valid_text(text)  # a tool's output is made valid once, here
            self._partial.append(text)
            if self.on_output is not None:
                self.on_output(call, text)

        ctx = ToolContext(
            cwd=self.cwd,
            on_output=tee,
            max_output_bytes=self.max_output_bytes,
            ledger=self.ledger,
            call_id=call.id,
            stops=self.stops,
        )
        try:
            result = await tool.run(args, ctx)
        except Exception as exc:  # a tool bug must still answer the call
            return ToolResult.error(valid_text(f"{call.name} failed: {type(exc).__name__}: {exc}"))
        finally:
            if finish is not None:  # ended, failed or stopped: record what it changed
                finish()
        content = valid_text(result.content)
        return result if content is result.content else replace(result, content=content)

    @property
    def running(self) -> ToolCall | None:
        """The call running now (or when a stop cut :meth:`run` short), if any."""
        return self.calls[self._current] if self._current is not None else None

    def stopped_tool(self, stop: StopRequest) -> StoppedTool | None:
        """The call ``stop`` cut short (or that ended after it came: a ``delegate`` call
        answers its stopped child's outcome), with the process group it ended for that call
        (its pid, and milliseconds from the stop to the group being gone); None when the stop
        came between calls."""
        call = self.running
        if call is None and self._last is not None and self._last[1] >= stop.requested_at:
            call = self._last[0]
        if call is None:
            return None
        ending = next((e for e in reversed(self.ledger.endings) if e.cause == "stop"), None)
        if ending is None or ending.gone_at < stop.requested_at:
            return StoppedTool(call.name)
        ended_ms = max(0.0, (ending.gone_at - stop.requested_at) * 1000.0)
        return StoppedTool(call.name, ending.command_pid, ended_ms, ending.signals)

    def stopped(self, stop: StopRequest) -> list[ToolOutcome]:
        """Answers for every call after a stop cut :meth:`run` short.

        Args:
            stop: the turn's first hard stop.

        Returns:
            one outcome per call, in order: finished calls keep their results, the interrupted
            one and the ones never started get :func:`stopped_result`.
        """
        out = list(self.outcomes)
        for index in range(len(out), len(self.calls)):
            call = self.calls[index]
            if index == self._current:
                result = stopped_result(
                    stop,
                    self._partial.text() if self._partial.total_bytes else "",
                    children_ended=self.ledger.children_ended - self._ended_before,
                    max_output_bytes=self.max_output_bytes,
                )
            else:
                result = stopped_result(stop, started=False)
            out.append(ToolOutcome(call, result))
        return out


__all__ = ["Approver", "ToolBatch", "ToolOutcome"]
