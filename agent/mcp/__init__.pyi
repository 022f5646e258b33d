"""Type checkers read this; at run time the face imports each name on first use."""

from __future__ import annotations

from agent.mcp.connection import (
    ServerConnection,
)
from agent.mcp.loop import (
    McpLoop,
)
from agent.mcp.names import (
    exposed_names,
)
from agent.mcp.status import (
    McpState,
    McpUnavailable,
    RemoteTool,
    ServerSpec,
    ServerStatus,
)
from agent.mcp.tool import (
    McpTool,
    Permission,
)

__all__ = [
    "McpLoop",
    "McpState",
    "McpTool",
    "McpUnavailable",
    "Permission",
    "RemoteTool",
    "ServerConnection",
    "ServerSpec",
    "ServerStatus",
    "exposed_names",
]
