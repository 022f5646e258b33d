"""The gateway's MCP servers: started with the gateway, offered to every turn, ended at shutdown.

A server lives with the gateway, not with a turn or a session: :class:`McpServers` starts every
enabled server in the background when the gateway is made (a turn never waits for that), every
session's turns are offered the tools of the servers that are ready when the turn is submitted,
and :meth:`McpServers.begin_close` ends them all when the gateway shuts down. Each change of a
server's state is published as a gateway-wide ``mcp.server`` event
(:class:`~contract.mcp_events.McpServerChanged`).

Approval of a server's tools comes from its settings: ``approval = "ask"`` asks the person
(allow once, always for this session, or deny), except, with ``allow_read_only = true``, for the
tools the server flags ``readOnlyHint``; ``"always"`` runs them unasked; ``"never"`` refuses
them without asking. Restarts: see :mod:`agent.mcp.connection` (a crashed server starts again on
its next call; one that failed to start waits for ``/mcp restart NAME``).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from agent.mcp import McpLoop, McpState, McpTool, Permission, ServerConnection, ServerStatus
from agent.mcp.status import RemoteTool
from agent.tools.base import Tool
from contract.errors import GatewayError
from contract.events import Payload
from contract.mcp_events import McpServerChanged
from tui_gateway.settings.mcp_settings import McpApproval, McpServerSettings


def permission(settings: McpServerSettings, tool: RemoteTool) -> Permission:
    """Whether a call of ``tool`` asks first, runs unasked, or is refused (module docstring)."""
    if settings.approval is McpApproval.NEVER:
        return "deny"
    if settings.approval is McpApproval.ALWAYS:
        return "allow"
    return "allow" if settings.allow_read_only and tool.read_only else "ask"


class McpServers:
    """Every MCP server of one gateway.

    Args:
        servers: the configured servers (disabled ones are listed, never started).
        publish: sends a gateway-wide payload that later subscribers get too, kept under the
            key given (one per server); must not block.
        cwd: the working directory of stdio servers (the workspace).
    """

    def __init__(
        self,
        servers: Sequence[McpServerSettings],
        publish: Callable[[Payload, str], None],
        *,
        cwd: Path,
    ) -> None:
        self._settings = {server.name: server for server in servers}
        self._publish = publish
        enabled = [server for server in servers if server.enabled]
        self._loop = McpLoop() if enabled else None
        self._connections: dict[str, ServerConnection] = {}
        if self._loop is not None:
            for server in enabled:
                self._connections[server.name] = ServerConnection(
                    server, self._loop, cwd=cwd, on_change=self._changed
                )
        self._closing: concurrent.futures.Future[object] | None = None

    def _changed(self, status: ServerStatus) -> None:
        self._publish(McpServerChanged.of(status), f"mcp.server {status.name}")

    @property
    def thread(self) -> threading.Thread | None:
        """The MCP loop's thread, or None when no server is enabled."""
        return self._loop.thread if self._loop is not None else None

    def start(self) -> None:
        """Start every enabled server in the background (returns at once)."""
        for connection in self._connections.values():
            connection.start()

    def statuses(self) -> list[ServerStatus]:
        """Every configured server as it is now, in the settings' order."""
        out: list[ServerStatus] = []
        for name, settings in self._settings.items():
            connection = self._connections.get(name)
            if connection is not None:
                out.append(connection.status())
            else:
                transport = "stdio" if settings.command is not None else "http"
                out.append(ServerStatus(name, McpState.DISABLED, transport))
        return out

    def tools(self) -> list[Tool]:
        """The tools a turn is offered now: those of every server that listed its tools
        (a failed one's too, so that a call can start it again)."""
        out: list[Tool] = []
        for name, connection in self._connections.items():
            settings = self._settings[name]
            status = connection.status()
            if status.state in (McpState.STOPPED, McpState.DISABLED):
                continue
            for remote in status.tools:
                out.append(
                    McpTool(
                        connection,
                        remote,
                        permission=permission(settings, remote),
                        timeout_s=settings.tool_timeout_s,
                    )
                )
        return out

    def restart(self, name: str) -> concurrent.futures.Future[ServerStatus]:
        """Stop the server if it runs and start it again (``/mcp restart NAME``).

        Raises:
            GatewayError: no such server, or it is disabled (code -32602).
        """
        connection = self._connections.get(name)
        if connection is None:
            if name in self._settings:
                raise GatewayError(f"the MCP server {name!r} is disabled (enabled = false)", -32602)
            known = ", ".join(self._settings) or "none are configured"
            raise GatewayError(f"there is no MCP server {name!r} ({known})", -32602)
        return connection.restart()

    def wait_started(self, timeout_s: float | None = None) -> bool:
        """Wait until no server is ``starting``; True when none is.

        Args:
            timeout_s: the bound in seconds (default: the longest ``startup_timeout_s`` of the
                servers, plus the SDK's 5 s to end a server that did not start).
        """
        if timeout_s is None:
            timeouts = [s.startup_timeout_s for s in self._settings.values() if s.enabled]
            timeout_s = max(timeouts, default=0.0) + 5.0
        deadline = time.monotonic() + timeout_s
        futures = [connection.settled() for connection in self._connections.values()]
        done, pending = concurrent.futures.wait(futures, max(0.0, deadline - time.monotonic()))
        return not pending

    def begin_close(self) -> None:
        """Start ending every server (the SDK's close: stdin, SIGTERM, SIGKILL after a grace);
        returns at once. Calls after this get an error result."""
        if self._loop is None or self._closing is not None:
            return
        closes = [connection.close() for connection in self._connections.values()]
        gathered: concurrent.futures.Future[object] = concurrent.futures.Future()

        def all_done(_: object) -> None:
            if all(future.done() for future in closes) and not gathered.done():
                gathered.set_result(None)

        for future in closes:
            future.add_done_callback(all_done)
        if not closes:
            gathered.set_result(None)
        self._closing = gathered

    def close(self, timeout_s: float) -> list[str]:
        """End every server (see :meth:`begin_close`), then the MCP loop, within ``timeout_s``.

        A server still running at the deadline is left to its guard: ending the loop's thread
        makes every guard end its server's process group (:mod:`agent.guard`).

        Returns:
            names of the servers not stopped in time, and of the loop's thread if it is alive.
        """
        if self._loop is None:
            return []
        self.begin_close()
        deadline = time.monotonic() + timeout_s
        assert self._closing is not None
        with contextlib.suppress(concurrent.futures.TimeoutError):
            self._closing.result(timeout=max(0.0, deadline - time.monotonic()))
        left = [
            f"mcp server {name}"
            for name, connection in self._connections.items()
            if connection.status().state not in (McpState.STOPPED, McpState.FAILED)
        ]
        if not self._loop.stop(max(0.1, deadline - time.monotonic())):
            left.append(self._loop.thread.name)
        return left


__all__ = ["McpServers", "permission"]
