"""The tool contract: what a tool is, what it gets to run, and what it gives back.

A tool is an object with a ``name``, a ``description``, a JSON schema of its ``parameters``, a
``needs_approval`` flag and an async ``run(args, ctx)``. Tools report failures the model should
see (a missing file, a non-zero exit) as ``ToolResult(is_error=True)``, never as exceptions. The
one exception a tool lets through is :class:`asyncio.CancelledError`: that is how a hard stop
arrives, and a tool that owns resources (child processes) releases them before re-raising it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from agent.home_path import expand_home
from agent.scope import InterruptScope
from agent.stops import StopRequest
from agent.tools.output import truncate_text
from agent.tools.process import ProcessLedger
from agent.tools.stop_text import count_processes, stopped_head

DEFAULT_MAX_OUTPUT_BYTES = 32_000
"""Default budget of one tool result, in bytes of UTF-8 (about 8,000 tokens)."""


def _discard(_text: str) -> None:
    return None


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What one tool call gives back to the model.

    Attributes:
        content: the text the model sees as the ``tool`` message.
        is_error: True when the call failed (bad arguments, missing file, non-zero exit,
            timeout, stop); the text says why.
        exit_code: a command's exit status (negative: killed by that signal number); None for
            tools that run no command, or when the command was ended by a timeout or a stop.
        truncated: True when output was cut to fit ``max_output_bytes``.
        stopped_by: the stop that cut the call short, else None.
        children_ended: how many child processes this call's cleanup ended (stop, timeout or
            leftover background processes); 0 for tools that start none.
    """

    content: str
    is_error: bool = False
    exit_code: int | None = None
    truncated: bool = False
    stopped_by: StopRequest | None = None
    children_ended: int = 0

    @classmethod
    def error(cls, message: str) -> ToolResult:
        """A failed call with a one-line ``message`` for the model."""
        return cls(content=message, is_error=True)


@dataclass(slots=True)
class ToolContext:
    """What a tool call runs with.

    Attributes:
        cwd: the directory relative paths and commands are resolved against.
        on_output: called on the event loop's thread with output text as it arrives (decoded
            UTF-8, invalid bytes replaced); it must not block.
        max_output_bytes: the budget of the result's ``content`` in UTF-8 bytes (head and tail
            are kept, the middle is replaced by a marker).
        ledger: where tools that start processes book the processes they end, so the host can
            say "N child processes ended" even when the call ended by a stop (share one ledger
            per turn).
        call_id: the id of the tool call being run ("" outside a batch).
        stops: the turn's :class:`~agent.scope.InterruptScope` (None outside a turn): a tool
            may register a member whose ``interrupt(stop)`` runs on the stopping thread at a
            hard stop, before the turn's loop is woken to cancel the call (the ``shell`` tool
            signals its command's processes there). It must not block.
    """

    cwd: Path
    on_output: Callable[[str], None] = _discard
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES
    ledger: ProcessLedger = field(default_factory=ProcessLedger)
    call_id: str = ""
    stops: InterruptScope | None = None

    def resolve(self, path: str) -> Path:
        """``path`` made absolute against :attr:`cwd` (``~`` is expanded; not resolved further)."""
        return (self.cwd / expand_home(path)).absolute()


class Tool(Protocol):
    """A function the model can call. Implementations are usually frozen dataclasses.

    Attributes:
        name: the function name the model uses (``[a-zA-Z0-9_-]{1,64}``).
        description: what the tool does, for the model.
        parameters: a JSON schema (``{"type": "object", "properties": ..., "required": ...}``)
            of the arguments.
        needs_approval: True when the host must ask the person before running a call.
    """

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def parameters(self) -> dict[str, Any]: ...

    @property
    def needs_approval(self) -> bool: ...

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Run one call.

        Args:
            args: the parsed arguments (already checked against :attr:`parameters`).
            ctx: working directory, output callback and budget.

        Returns:
            the call's result; failures are results with ``is_error=True``.

        Raises:
            asyncio.CancelledError: when the awaiting task is cancelled (a hard stop), after the
                call released everything it started.
        """
        ...


def tool_schema(tool: Tool) -> dict[str, Any]:
    """The OpenAI ``tools[]`` element for ``tool``: ``{"type": "function", "function": {...}}``."""
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
        },
    }


class ToolArgumentError(ValueError):
    """The model sent arguments that are not valid JSON or do not fit the tool's schema.

    Attributes:
        tool: the tool's name, when known.
    """

    def __init__(self, message: str, tool: str | None = None) -> None:
        super().__init__(message)
        self.tool = tool


def stopped_result(
    stop: StopRequest,
    partial_output: str = "",
    *,
    started: bool = True,
    children_ended: int = 0,
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
) -> ToolResult:
    """The result of a tool call cut short (or never started) because of a stop.

    The text names the party from :meth:`StopRequest.describe` ("stopped by the user" or
    "stopped by the system: <reason>"), so a system stop never reads as the person's choice.

    Args:
        stop: the stop that ended the turn.
        partial_output: what the call printed before the stop (cut to ``max_output_bytes``).
        started: False for a call that never ran (it comes after the stopped one in the same
            assistant message); the text then starts with ``not run:``.
        children_ended: child processes the stop ended, shown when non-zero.
        max_output_bytes: budget for ``partial_output``, in UTF-8 bytes.

    Returns:
        ``ToolResult(is_error=True, stopped_by=stop)``.
    """
    head = stopped_head(stop.describe(), started=started, children_ended=children_ended)
    truncated = False
    if partial_output:
        partial_output, truncated = truncate_text(partial_output, max_output_bytes)
        head += f"\n\npartial output before the stop:\n{partial_output}"
    return ToolResult(
        content=head,
        is_error=True,
        truncated=truncated,
        stopped_by=stop,
        children_ended=children_ended,
    )


__all__ = [
    "DEFAULT_MAX_OUTPUT_BYTES",
    "Tool",
    "ToolArgumentError",
    "ToolContext",
    "ToolResult",
    "count_processes",
    "stopped_result",
    "tool_schema",
]
