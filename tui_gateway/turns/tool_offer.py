"""The tools every turn's agent is offered, and their definitions as a request carries them.

The built-in tools (``shell``, ``read_file``, ``write_file``, ``list_dir``), ``delegate`` unless
delegation is off (its tool is built per agent by :mod:`tui_gateway.turns.delegation`), and the MCP
servers' tools, whose list changes as servers start, fail and come back. The definitions are
what a context count adds to every request (:data:`~tui_gateway.turns.context_window.OfferedTools`).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from agent.tools.base import tool_schema
from agent.tools.delegate import delegate_schema
from agent.tools.registry import ToolRegistry, default_tools
from agent.tools.sandbox import Sandbox
from agent.tools.shell_tool import ShellTool
from agent.tools.spares import SparePool
from agent.tools.workspace import Workspace
from contract.errors import GatewayError
from tui_gateway.engine_setup import GatewayConfig
from tui_gateway.servers.mcp_servers import McpServers


class ToolOffer:
    """What a gateway's turns are offered.

    Args:
        config: ``tools`` (False offers none at all) and ``delegate_depth`` (0: no
            ``delegate``).
        mcp: the gateway's MCP servers.

    Attributes:
        registry: the built-in tools, or None when the gateway offers no tools.
    """

    def __init__(self, config: GatewayConfig, mcp: McpServers) -> None:
        shell = sandboxed_shell(config)
        self.spares: SparePool | None = None
        """Keepers for ``shell`` calls started ahead of need (none when sandboxed)."""
        if config.tools and not shell.sandbox.on:
            self.spares = SparePool(shell.grace_s)
            shell = replace(shell, spares=self.spares)
        self.registry = ToolRegistry(default_tools(shell)) if config.tools else None
        self._mcp = mcp
        self._fixed = self.registry.schemas() if self.registry is not None else []
        if self.registry is not None and config.delegate_depth > 0:
            self._fixed.append(delegate_schema())

    def close(self) -> int:
        """End the spare keepers (at the gateway's shutdown, once no turn runs); how many
        did not exit within the bound."""
        return self.spares.close() if self.spares is not None else 0

    def schemas(self) -> list[dict[str, Any]]:
        """The ``tools[]`` elements a request carries now (MCP tools included).

        A turn about to be offered ``shell`` may call it: a spare keeper is started now if
        none is ready, so that the call does not wait for one."""
        if self.spares is not None:
            self.spares.warm()
        return [*self._fixed, *(tool_schema(tool) for tool in self._mcp.tools())]


def sandboxed_shell(config: GatewayConfig) -> ShellTool:
    """The ``shell`` tool as ``config.sandbox`` confines it (the deny list hidden from it)."""
    denied = Workspace.at(config.cwd or Path.cwd(), config.denied_paths).denied
    sandbox = Sandbox(config.sandbox, config.sandbox_network, hidden=denied)
    return ShellTool(sandbox=sandbox)


def check_text(text: str, what: str, limit: int) -> None:
    """Refuse an empty prompt (or steer) and one over ``limit`` characters.

    Raises:
        GatewayError: empty or too long (code -32602), naming ``what`` and the figures.
    """
    if not text.strip():
        raise GatewayError(f"the {what} is empty", code=-32602)
    if len(text) > limit:
        raise GatewayError(
            f"the {what} is {len(text):,} characters; the limit is {limit:,}", code=-32602
        )
