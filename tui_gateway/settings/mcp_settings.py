"""``[mcp_servers.NAME]`` tables of the config file, checked into :class:`McpServerSettings`.

The convention is Codex's::

    [mcp_servers.time]
    command = "uvx"                 # stdio: the server's command line
    args = ["mcp-server-time"]
    env = { TZ = "Europe/Paris" }
    # or: url = "http://127.0.0.1:PORT/mcp" (streamable HTTP), headers = { ... }
    startup_timeout_s = 10
    tool_timeout_s = 60
    max_result_mb = 50              # a longer answer is dropped, and the call ends with an error
    enabled = true
    approval = "ask"                # or "always", "never"
    allow_read_only = false         # true: tools the server flags readOnlyHint run unasked

Keys this module does not know are kept in :attr:`McpServerSettings.extra`.

For one run, ``--mcp NAME=COMMAND...`` adds a stdio server (``NAME=http://...`` a streamable
HTTP one) with the defaults above; it replaces a table of the same name (:func:`parse_mcp_flag`).
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal
from urllib.parse import urlsplit

from tui_gateway.settings.config_file import ConfigFileError, SettingsError
from tui_gateway.settings.named_tables import NAME_RE, Bad, named_tables, optional_str

DEFAULT_STARTUP_TIMEOUT_S = 10.0
"""How long a server may take to start and list its tools, in seconds."""

DEFAULT_TOOL_TIMEOUT_S = 60.0
"""How long one tool call may take, in seconds."""

DEFAULT_MAX_RESULT_MB = 50.0
"""The longest message desk reads from a stdio server, in megabytes (10**6 bytes)."""

_KNOWN = frozenset(
    {
        "command",
        "args",
        "env",
        "url",
        "headers",
        "startup_timeout_s",
        "tool_timeout_s",
        "max_result_mb",
        "enabled",
        "approval",
        "allow_read_only",
    }
)


_Bad = Callable[[str, str], ConfigFileError]
"""Makes the error for ``(item, what it must be)`` of one server's table."""


class McpApproval(StrEnum):
    """Whether the person is asked before a server's tool runs."""

    ASK = "ask"
    """Ask each time (allow once / always for this session / deny)."""
    ALWAYS = "always"
    """Allow every call without asking."""
    NEVER = "never"
    """Deny every call without asking."""


def _empty() -> Mapping[str, Any]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class McpServerSettings:
    """One MCP server the model may use tools of.

    Attributes:
        name: the table's name (letters, digits, ``_``, ``-``); tools are offered to the model
            as ``mcp__<name>__<tool>``.
        command: the stdio server's program, or None for a streamable-HTTP server.
        args: the program's arguments.
        env: extra environment variables of the server's process.
        url: the streamable-HTTP endpoint, or None for a stdio server.
        headers: HTTP headers sent with every request to ``url``.
        startup_timeout_s: seconds the server may take to start and list its tools.
        tool_timeout_s: seconds one tool call may take.
        max_result_mb: the longest message read from a server (a stdio line, an HTTP JSON body
            or event), in megabytes; a longer answer is cut and its call ends with an error
            saying so.
        enabled: False keeps the server configured but not started.
        approval: whether calls of its tools ask first.
        allow_read_only: with ``approval = "ask"``, tools the server flags ``readOnlyHint`` run
            without asking (the flag is the server's word: trust the server first).
        extra: keys of the table this version does not know, kept as read.
    """

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=_empty)
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=_empty)
    startup_timeout_s: float = DEFAULT_STARTUP_TIMEOUT_S
    tool_timeout_s: float = DEFAULT_TOOL_TIMEOUT_S
    max_result_mb: float = DEFAULT_MAX_RESULT_MB
    enabled: bool = True
    approval: McpApproval = McpApproval.ASK
    allow_read_only: bool = False
    extra: Mapping[str, Any] = field(default_factory=_empty)

    @property
    def transport(self) -> Literal["stdio", "http"]:
        """``stdio`` for a command, ``http`` for a URL."""
        return "stdio" if self.command is not None else "http"


def parse_mcp_servers(value: Any, path: Path) -> Mapping[str, McpServerSettings]:
    """The ``mcp_servers`` table of the file at ``path``, checked.

    Args:
        value: ``data["mcp_servers"]`` (None when the file has none).
        path: the config file, named in errors.

    Returns:
        the servers by name, in the file's order (read-only).

    Raises:
        ConfigFileError: a value of the wrong type or out of range; the message names the
            file and the key (``.../config.toml: mcp_servers.time.args must be ...``).
    """
    servers = {
        name: _server(name, table, path, bad)
        for name, table, bad in named_tables(value, path, "mcp_servers", "server")
    }
    return MappingProxyType(servers)


def _server(name: str, table: dict[str, Any], path: Path, bad: Bad) -> McpServerSettings:
    key = f"mcp_servers.{name}"
    command = optional_str(table, "command", bad)
    url = optional_str(table, "url", bad)
    if command is None and url is None:
        raise ConfigFileError(f"{path}: {key} needs command (stdio) or url (streamable HTTP)")
    if command is not None and url is not None:
        raise ConfigFileError(f"{path}: {key} takes command or url, not both")
    if url is not None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise bad("url", "an http(s) URL such as http://127.0.0.1:8000/mcp")
    args = table.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise bad("args", "a list of strings")
    approval = table.get("approval", McpApproval.ASK.value)
    if approval not in {a.value for a in McpApproval}:
        raise bad("approval", '"ask", "always" or "never"')
    enabled = table.get("enabled", True)
    if not isinstance(enabled, bool):
        raise bad("enabled", "true or false")
    allow_read_only = table.get("allow_read_only", False)
    if not isinstance(allow_read_only, bool):
        raise bad("allow_read_only", "true or false")
    return McpServerSettings(
        name=name,
        command=command,
        args=tuple(args),
        env=_string_table(table, "env", bad),
        url=url,
        headers=_string_table(table, "headers", bad),
        startup_timeout_s=_seconds(table, "startup_timeout_s", DEFAULT_STARTUP_TIMEOUT_S, bad),
        tool_timeout_s=_seconds(table, "tool_timeout_s", DEFAULT_TOOL_TIMEOUT_S, bad),
        max_result_mb=_seconds(table, "max_result_mb", DEFAULT_MAX_RESULT_MB, bad, "megabytes"),
        enabled=enabled,
        approval=McpApproval(approval),
        allow_read_only=allow_read_only,
        extra=MappingProxyType({k: v for k, v in table.items() if k not in _KNOWN}),
    )


def _string_table(table: dict[str, Any], item: str, bad: Bad) -> Mapping[str, str]:
    value = table.get(item, {})
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise bad(item, 'a table of strings, e.g. { KEY = "value" }')
    return MappingProxyType(dict(value))


def _seconds(
    table: dict[str, Any], item: str, default: float, bad: Bad, unit: str = "seconds"
) -> float:
    value = table.get(item, default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise bad(item, f"a positive number of {unit}")
    if not (value > 0 and math.isfinite(value)):
        raise bad(item, f"a positive number of {unit}")
    return float(value)


def parse_mcp_flag(text: str) -> McpServerSettings:
    """One ``--mcp NAME=COMMAND...`` flag: a stdio server (``NAME=URL``: streamable HTTP).

    The command line is split like a shell's (``--mcp 'time=mcp-server-time --local-timezone
    UTC'``); the server gets the defaults of a table that names nothing else.

    Raises:
        SettingsError: no ``=``, a bad name, an empty or unsplittable command (one line).
    """
    name, sep, command = text.partition("=")
    usage = "--mcp takes NAME=COMMAND (e.g. --mcp 'time=mcp-server-time')"
    if not sep or not name.strip():
        raise SettingsError(f"{usage}, not {text!r}")
    name = name.strip()
    if not NAME_RE.fullmatch(name):
        raise SettingsError(f"--mcp {name}: a server name is letters, digits, '_' and '-' only")
    parts = urlsplit(command.strip())
    if parts.scheme in ("http", "https") and parts.netloc:
        return McpServerSettings(name=name, url=command.strip())
    try:
        words = shlex.split(command)
    except ValueError as exc:
        raise SettingsError(f"--mcp {name}: cannot split the command line: {exc}") from None
    if not words:
        raise SettingsError(f"{usage}: the command after {name}= is empty")
    return McpServerSettings(name=name, command=words[0], args=tuple(words[1:]))
