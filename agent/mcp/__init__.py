"""Tools from Model Context Protocol servers, stopped with the turn and gone with desk.

Public API (none of it imports the MCP SDK; the SDK is imported on the MCP loop when a server
first starts):

* :class:`McpLoop`: the MCP clients' own event loop thread;
* :class:`ServerConnection`: one server, reached from any thread (start, call, restart, close);
* :class:`McpTool`: one of its tools as a desk tool, ``mcp__<server>__<tool>``;
* :class:`ServerSpec`, :class:`ServerStatus`, :class:`McpState`, :class:`RemoteTool`,
  :class:`McpUnavailable`: what a server is told to be, and what it is;
* :func:`exposed_names`: the model's names for a server's tools.

Internals: :mod:`agent.mcp.transport` (stdio behind :mod:`agent.guard`, streamable HTTP) and
:mod:`agent.mcp.results` (listings and answers as desk's tools and text).
"""

from __future__ import annotations

from agent.faces import lazy_names

__all__, __getattr__ = lazy_names(
    __name__,
    {
        "McpLoop": "agent.mcp.loop",
        "McpState": "agent.mcp.status",
        "McpTool": "agent.mcp.tool",
        "McpUnavailable": "agent.mcp.status",
        "Permission": "agent.mcp.tool",
        "RemoteTool": "agent.mcp.status",
        "ServerConnection": "agent.mcp.connection",
        "ServerSpec": "agent.mcp.status",
        "ServerStatus": "agent.mcp.status",
        "exposed_names": "agent.mcp.names",
    },
)
