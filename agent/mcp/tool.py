"""One MCP server's tool as a desk tool: ``mcp__<server>__<tool>``, stopped with the turn.

The call is handed to the MCP loop (:meth:`agent.mcp.connection.ServerConnection.call`) and its
future awaited on the turn's own loop:

* **stop**: the turn's task is cancelled; the tool cancels the future (the MCP loop then cancels
  the request's task and the SDK sends ``notifications/cancelled``) and re-raises at once. It
  waits for nothing on the MCP loop, so a server that ignores the cancel, or a busy loop, never
  holds the turn.
* **timeout**: after ``timeout_s`` the request is cancelled the same way and the model gets an
  error result that says so.
* **failure**: a server that cannot be reached, crashed or broke the protocol gives an error
  result with the reason, which the model can read; the turn goes on.

The answer's text is cut to the call's byte budget (head and tail kept), like a shell command's
output; the desk makes it terminal-safe where it shows it, as it does every tool's output.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from agent.mcp.connection import ServerConnection
from agent.mcp.status import McpUnavailable, RemoteTool
from agent.tools.base import ToolContext, ToolResult
from agent.tools.output import truncate_text

Permission = Literal["ask", "allow", "deny"]
"""Whether a call asks the person first, runs without asking, or is refused without asking."""


@dataclass(frozen=True, slots=True)
class McpTool:
    """One tool of one MCP server, offered to the model.

    Attributes:
        server: the server's connection.
        remote: the tool as the server listed it.
        permission: ``ask`` (the host's approver is asked), ``allow``, or ``deny``.
        timeout_s: seconds a call may take before it is cancelled and reported as an error.
    """

    server: ServerConnection
    remote: RemoteTool
    permission: Permission = "ask"
    timeout_s: float = 60.0

    @property
    def name(self) -> str:
        """``mcp__<server>__<tool>``."""
        return self.remote.exposed

    @property
    def description(self) -> str:
        """The server's description of the tool, and whose tool it is."""
        where = f"(Tool {self.remote.name!r} of the MCP server {self.server.name!r}.)"
        return f"{self.remote.description}\n\n{where}"

    @property
    def parameters(self) -> dict[str, Any]:
        """The server's JSON schema of the arguments."""
        return dict(self.remote.input_schema)

    @property
    def needs_approval(self) -> bool:
        """True when the person is asked before each call."""
        return self.permission == "ask"

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Call the tool on its server; see the module docstring for how a call ends.

        Raises:
            asyncio.CancelledError: on a hard stop, right after the request was cancelled.
        """
        if self.permission == "deny":
            return ToolResult.error(
                f"{self.name}: the MCP server {self.server.name!r} is set to approval = "
                '"never": its tools are not run'
            )
        return await call_tool(self.server, self.remote.name, args, ctx, self.timeout_s, self.name)


async def call_tool(
    server: ServerConnection,
    tool: str,
    args: Mapping[str, Any],
    ctx: ToolContext,
    timeout_s: float,
    shown: str,
) -> ToolResult:
    """One call of ``tool`` on ``server``, awaited on the running (turn's) loop.

    Args:
        server: the connection.
        tool: the server's name for the tool.
        args: the arguments.
        ctx: the call's context (its byte budget is used).
        timeout_s: seconds before the request is cancelled.
        shown: the tool's name in messages (``mcp__time__get_current_time``).

    Returns:
        the answer as a result; an error result for a timeout, a server error or a server that
        cannot be reached.

    Raises:
        asyncio.CancelledError: when the awaiting task is cancelled (the request is cancelled
            first, without waiting).
    """
    try:
        future = server.call(tool, args)
    except RuntimeError as exc:  # the MCP loop is gone: the gateway is shutting down
        return ToolResult.error(f"mcp: {server.name} failed: {exc}")
    waiting = asyncio.wrap_future(future)
    try:
        done, _ = await asyncio.wait({waiting}, timeout=timeout_s)
    except asyncio.CancelledError:
        future.cancel()
        raise
    if not done:
        future.cancel()
        return ToolResult.error(
            f"{shown} timed out after {timeout_s:g} s (the MCP server {server.name!r} was told "
            "to cancel it)"
        )
    try:
        answer = waiting.result()
    except McpUnavailable as exc:
        return ToolResult.error(f"mcp: {server.name} failed: {exc.message}")
    except asyncio.CancelledError:  # cancelled on the MCP loop (its shutdown)
        return ToolResult.error(f"mcp: {server.name} failed: the call was cancelled")
    text, truncated = truncate_text(answer.text, ctx.max_output_bytes)
    return ToolResult(content=text, is_error=answer.is_error, truncated=truncated)


__all__ = ["McpTool", "Permission", "call_tool"]
