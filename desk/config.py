"""Start-up configuration: the shared settings plus desk's own flags, then the server to use.

The settings every entry point takes (``--base-url --model --api-key --db --context-window
--workspace --demo``, their environment variables and ``$XDG_CONFIG_HOME/desk/config.toml``)
resolve in :mod:`tui_gateway.settings.resolution`; desk adds its own keys on top: ``--escdelay``
(``ESCDELAY``, ``escdelay`` in the file, see :mod:`desk.user_config`), ``--resume`` and
``--gateway-cmd``. Without ``--db`` sessions go to ``$XDG_DATA_HOME/desk/desk.db``. A configured
server is not asked here: the gateway checks it once the desk is on screen, and again while it
does not answer (:mod:`tui_gateway.servers.model_server`). With nothing configured, llama.cpp's and
Ollama's default local addresses are probed at once within about 300 ms, and when none answers
desk starts its demo model.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, NoReturn

from desk.probe import LOCAL_SERVERS, ProbeResult, probe
from desk.user_config import DEFAULT_ESCAPE_DELAY_MS, MAX_ESCAPE_DELAY_MS, file_escape_delay
from tui_gateway.settings.config_file import ConfigFile, config_path
from tui_gateway.settings.resolution import Settings, SettingsError, StoreDefault, resolve_settings
from tui_gateway.settings.settings_flags import add_settings_flags, flag_values, mcp_flag_values

__all__ = [
    "DEFAULT_ESCAPE_DELAY_MS",
    "MAX_ESCAPE_DELAY_MS",
    "ConfigError",
    "ConnectionInfo",
    "DeskOptions",
    "ServerChoice",
    "build_parser",
    "choose_server",
    "parse_options",
]

LOCAL_PROBE_BUDGET_S = 0.3
"""Total time for probing the local default servers, in seconds."""

ProbeFn = Callable[..., list[ProbeResult]]

ConfigError = SettingsError
"""A start-up problem the person can fix (one line, shown without traceback): the settings'
own error, so a bad flag, variable, file value or server all read alike."""


@dataclass(frozen=True, slots=True)
class DeskOptions:
    """The settings and desk's own flags, before any probing.

    Attributes:
        settings: what every entry point resolves (server, model, key, database, window,
            workspace, ``--demo``).
        escape_delay_ms: milliseconds before a lone ESC byte is the Esc key.
        resume: reopen a saved session at start (``--resume``).
        resume_id: the session to reopen, or None for the most recent one.
        gateway_cmd: run the desk against a gateway in a child process started with this
            command line (``--gateway-cmd``), or None for the embedded gateway.
    """

    settings: Settings = field(default_factory=Settings)
    escape_delay_ms: int = DEFAULT_ESCAPE_DELAY_MS
    resume: bool = False
    resume_id: str | None = None
    gateway_cmd: str | None = None


@dataclass(frozen=True, slots=True)
class ServerChoice:
    """Where requests go.

    Attributes:
        base_url: the server root, or None to start the demo model.
        model: the model to use ("" for the first one the server lists; None with the demo:
            the demo names it).
        source: short human text saying how the server was chosen.
    """

    base_url: str | None
    model: str | None
    source: str


@dataclass(frozen=True, slots=True)
class ConnectionInfo:
    """What the app shows about the model server (display only: no secrets).

    Attributes:
        model: the model name.
        base_url: the server root, e.g. ``http://127.0.0.1:8080/v1``.
        is_demo: True when this is desk's built-in demo model.
        source: how the server was chosen, e.g. ``--base-url`` or ``found llama.cpp``.
    """

    model: str
    base_url: str
    is_demo: bool = False
    source: str = ""


SUBCOMMANDS_HELP = """\
subcommands (each has its own --help):
  desk gateway --stdio [...]  serve the gateway as JSON-RPC 2.0 on stdin/stdout
  desk serve [...]            serve the gateway over HTTP with server-sent events
  desk run [...] "PROMPT"     run one turn headless and print the reply (--json: events)
  desk acp [...]              be an Agent Client Protocol agent on stdin/stdout (editors)
"""
"""The subcommands, listed at the end of ``desk --help``."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise ConfigError(f"{message} (see desk --help)")


def build_parser() -> argparse.ArgumentParser:
    """The command-line parser; its ``error`` raises :class:`ConfigError`."""
    parser = _Parser(
        prog="desk",
        description="Run an AI agent against any OpenAI-compatible model server.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=SUBCOMMANDS_HELP,
    )
    add_settings_flags(parser, store_default=StoreDefault.USER_DATA)
    parser.add_argument(
        "--escdelay",
        metavar="MS",
        type=_escape_delay,
        help=f"ms before a lone ESC is the Esc key (env ESCDELAY, config escdelay; default "
        f"{DEFAULT_ESCAPE_DELAY_MS}; raise it on slow remote links)",
    )
    parser.add_argument(
        "--resume",
        nargs="?",
        const="",
        metavar="ID",
        help="reopen a saved session: the given one, or the most recent",
    )
    parser.add_argument(
        "--gateway-cmd",
        metavar="CMD",
        help="run against a gateway in a child process started with CMD, speaking JSON-RPC on "
        'its stdio (e.g. "desk gateway --stdio --demo"); the settings flags then belong to CMD',
    )
    return parser


def _escape_delay(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of milliseconds: {text!r}") from None
    if not 1 <= value <= MAX_ESCAPE_DELAY_MS:
        raise argparse.ArgumentTypeError(f"must be 1..{MAX_ESCAPE_DELAY_MS} ms, not {value}")
    return value


def parse_options(
    argv: Sequence[str],
    env: Mapping[str, str],
    file: ConfigFile | Mapping[str, Any] | None = None,
    *,
    cwd: Path | None = None,
) -> DeskOptions:
    """Flags, with the environment, then the config file as fallback.

    Args:
        argv: the arguments after the program name.
        env: the environment (``os.environ``).
        file: the config file (:func:`tui_gateway.settings.config_file.read_config_file`), or its
            parsed data (named as ``config_path(env)`` in errors), or None for no file.
        cwd: the directory relative paths start from (default: the process's).

    Returns:
        the options.

    Raises:
        ConfigError: a bad flag or value.
        SystemExit: for ``--help`` (code 0), from argparse.
    """
    args = build_parser().parse_args(list(argv))
    if file is not None and not isinstance(file, ConfigFile):
        file = ConfigFile(config_path(env), MappingProxyType(dict(file)), exists=True)
    settings = resolve_settings(
        flag_values(args),
        env,
        file,
        store_default=StoreDefault.USER_DATA,
        cwd=cwd,
        mcp_flags=mcp_flag_values(args),
    )
    escape_delay = args.escdelay
    if escape_delay is None:
        try:
            escape_delay = _escape_delay(env.get("ESCDELAY", ""))
        except argparse.ArgumentTypeError:  # a curses convention other programs share: lenient
            escape_delay = None
    if escape_delay is None and file is not None:
        escape_delay = file_escape_delay(file)
    return DeskOptions(
        settings=settings,
        escape_delay_ms=DEFAULT_ESCAPE_DELAY_MS if escape_delay is None else escape_delay,
        resume=args.resume is not None,
        resume_id=args.resume or None,
        gateway_cmd=args.gateway_cmd or None,
    )


def choose_server(
    settings: Settings,
    *,
    probe_fn: ProbeFn = probe,
    local_servers: Sequence[tuple[str, str]] = LOCAL_SERVERS,
    local_budget_s: float = LOCAL_PROBE_BUDGET_S,
) -> ServerChoice:
    """Decide which server to use (it probes the local defaults when nothing is configured).

    A configured server is taken as it is, without asking it: whether it answers, takes the
    key and lists the model is the gateway's to find out once the desk runs.

    Args:
        settings: the resolved settings (``demo``, ``base_url``, ``model``, ``api_key``).
        probe_fn: :func:`desk.probe.probe` or a stand-in.
        local_servers: (name, base URL) probed when nothing is configured, in preference order.
        local_budget_s: time for probing the local servers, in seconds.

    Returns:
        the server and model, or a choice with ``base_url=None`` meaning "start the demo".
    """
    if settings.demo:
        return ServerChoice(None, None, "--demo")
    if settings.base_url:
        return ServerChoice(
            settings.base_url, settings.model or "", settings.origin("base_url").label
        )
    urls = [url for _name, url in local_servers]
    results = probe_fn(urls, api_key=settings.api_key, budget_s=local_budget_s)
    for (name, url), result in zip(local_servers, results, strict=True):
        if result.usable:
            return ServerChoice(url, settings.model or result.models[0], f"found {name}")
    return ServerChoice(None, None, "no model server configured or found")
