"""How to reach an MCP server (:class:`ServerSpec`), and how it stands (:class:`ServerStatus`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol


class McpState(StrEnum):
    """Where one MCP server stands."""

    DISABLED = "disabled"
    """Configured with ``enabled = false``: never started."""
    STARTING = "starting"
    """Its process or connection is being set up, its tools listed."""
    READY = "ready"
    """Listed its tools; calls go to it."""
    FAILED = "failed"
    """Did not start, or crashed, or broke the protocol; :attr:`ServerStatus.message` says how."""
    STOPPED = "stopped"
    """Shut down by desk (at quit)."""


class ServerSpec(Protocol):
    """How to reach one MCP server (``tui_gateway.settings.mcp_settings.McpServerSettings`` is one).

    Attributes:
        name: the server's name (letters, digits, ``_``, ``-``).
        command: the stdio server's program, or None for a streamable-HTTP server.
        args: the program's arguments.
        env: extra environment variables of the server's process.
        url: the streamable-HTTP endpoint, or None for a stdio server.
        headers: HTTP headers sent with every request to ``url``.
        startup_timeout_s: seconds the server may take to start and list its tools.
        tool_timeout_s: seconds one tool call may take.
        max_result_mb: the longest message read from a server (a stdio line, an HTTP JSON body
            or event), in megabytes (10**6 bytes).
    """

    @property
    def name(self) -> str: ...

    @property
    def command(self) -> str | None: ...

    @property
    def args(self) -> tuple[str, ...]: ...

    @property
    def env(self) -> Mapping[str, str]: ...

    @property
    def url(self) -> str | None: ...

    @property
    def headers(self) -> Mapping[str, str]: ...

    @property
    def startup_timeout_s(self) -> float: ...

    @property
    def tool_timeout_s(self) -> float: ...

    @property
    def max_result_mb(self) -> float: ...


@dataclass(frozen=True, slots=True)
class RemoteTool:
    """One tool a server listed.

    Attributes:
        name: the server's name for it (what ``tools/call`` is sent).
        exposed: the model's name for it, ``mcp__<server>__<tool>`` (see :mod:`agent.mcp.names`).
        description: the server's description (its title when it gave none).
        input_schema: the JSON schema of its arguments (an object schema).
        read_only: the server flagged it ``readOnlyHint`` (a hint: it says it changes nothing).
    """

    name: str
    exposed: str
    description: str
    input_schema: Mapping[str, Any]
    read_only: bool = False


@dataclass(frozen=True, slots=True)
class ServerStatus:
    """One server as it is now.

    Attributes:
        name: the server's name.
        state: starting, ready, failed, stopped or disabled.
        transport: ``stdio`` or ``http``.
        tools: the tools it listed when it last started (kept after a crash, so a call can
            start it again).
        message: for a failed server, one line saying why (``exited with code 3: ...``).
        pgid: the process group of a running stdio server, else None.
    """

    name: str
    state: McpState
    transport: str
    tools: tuple[RemoteTool, ...] = ()
    message: str = ""
    pgid: int | None = None


class McpUnavailable(Exception):
    """A call could not reach its server; ``message`` is one line for the model and the person."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


__all__ = ["McpState", "McpUnavailable", "RemoteTool", "ServerSpec", "ServerStatus"]
