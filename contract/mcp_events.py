"""The gateway's one MCP event: a server changed state (``mcp.server``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from agent.mcp.status import McpState, ServerStatus
from contract.envelope import Payload


@dataclass(frozen=True, slots=True)
class McpServerChanged(Payload):
    """An MCP server changed state; a gateway-wide event (its ``session_id`` is "").

    A frontend shows a ``failed`` one as one line, ``mcp: NAME failed: MESSAGE``, in the
    transcript and the status bar; the other tools keep working.

    Attributes:
        name: the server's name (``[mcp_servers.NAME]`` or ``--mcp NAME=...``).
        state: ``starting``, ``ready``, ``failed``, ``stopped`` or ``disabled``.
        transport: ``stdio`` or ``http``.
        tools: the model's names of its tools (``mcp__NAME__TOOL``), as last listed.
        message: for ``failed``, one line saying why (``exited with code 3: ...``).
    """

    TYPE: ClassVar[str] = "mcp.server"
    name: str
    state: McpState
    transport: str
    tools: list[str] = field(default_factory=list)
    message: str = ""

    @classmethod
    def of(cls, status: ServerStatus) -> McpServerChanged:
        """The event for a server's new status."""
        return cls(
            name=status.name,
            state=status.state,
            transport=status.transport,
            tools=[tool.exposed for tool in status.tools],
            message=status.message,
        )

    @property
    def line(self) -> str:
        """``mcp: NAME failed: MESSAGE`` (or ``mcp: NAME ready, 2 tools``), one line."""
        if self.state == McpState.FAILED:
            return f"mcp: {self.name} failed: {self.message}"
        if self.state == McpState.READY:
            count = len(self.tools)
            return f"mcp: {self.name} ready, {count} tool{'s' if count != 1 else ''}"
        return f"mcp: {self.name} {McpState(self.state).value}"


__all__ = ["McpServerChanged", "McpState"]
