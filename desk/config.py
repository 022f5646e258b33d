"""Start-up configuration: flags and environment resolved into typed values.

Order of precedence: flags, then environment (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``,
``DESK_MODEL``, ``ESCDELAY``), then the config file (``base_url``, ``model``, ``api_key`` in
``$XDG_CONFIG_HOME/desk/config.toml``, see :mod:`desk.user_config`), then probing. A
configured server is checked once (``GET /models``); with nothing configured, llama.cpp's and
Ollama's default local addresses are probed at once within about 300 ms, and when none answers
desk starts its demo model.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import NoReturn
from urllib.parse import urlsplit

from desk.probe import LOCAL_SERVERS, ProbeResult, probe

DEFAULT_ESCAPE_DELAY_MS = 10
"""Default wait, in milliseconds, before a lone ESC byte counts as the Esc key."""

MAX_ESCAPE_DELAY_MS = 2000
"""Largest accepted ``--escdelay``, in milliseconds."""

LOCAL_PROBE_BUDGET_S = 0.3
"""Total time for probing the local default servers, in seconds."""

CHECK_BUDGET_S = 5.0
"""Time for checking a configured server, in seconds."""

ProbeFn = Callable[..., list[ProbeResult]]


class ConfigError(Exception):
    """A start-up problem the person can fix; ``message`` is one line, shown without traceback."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True, slots=True)
class DeskOptions:
    """Flags and environment, before any probing.

    Attributes:
        base_url: the configured server root, or None.
        base_url_source: where ``base_url`` came from (``--base-url`` or ``OPENAI_BASE_URL``).
        model: the configured model, or None.
        api_key: the bearer token, or None.
        escape_delay_ms: milliseconds before a lone ESC byte is the Esc key.
        demo: force the built-in demo model.
        resume: reopen a saved session at start (``--resume``).
        resume_id: the session to reopen, or None for the most recent one.
        db_path: the session database (``--db``), or None for the default place.
        gateway_cmd: run the desk against a gateway in a child process started with this
            command line (``--gateway-cmd``), or None for the embedded gateway.
    """

    base_url: str | None = None
    base_url_source: str = ""
    model: str | None = None
    api_key: str | None = None
    escape_delay_ms: int = DEFAULT_ESCAPE_DELAY_MS
    demo: bool = False
    resume: bool = False
    resume_id: str | None = None
    db_path: str | None = None
    gateway_cmd: str | None = None


@dataclass(frozen=True, slots=True)
class ServerChoice:
    """Where requests go.

    Attributes:
        base_url: the server root, or None to start the demo model.
        model: the model to use (None with the demo: the demo names it).
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
  desk run [...] "PROMPT"     run one turn headless and print the reply
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
    parser.add_argument("--base-url", help="server root ending in /v1 (env OPENAI_BASE_URL)")
    parser.add_argument("--model", help="model name (env DESK_MODEL; default: the server's first)")
    parser.add_argument("--api-key", help="bearer token (env OPENAI_API_KEY)")
    parser.add_argument(
        "--escdelay",
        metavar="MS",
        type=_escape_delay,
        help=f"ms before a lone ESC is the Esc key (env ESCDELAY; default "
        f"{DEFAULT_ESCAPE_DELAY_MS}; raise it on slow remote links)",
    )
    parser.add_argument("--demo", action="store_true", help="use the built-in demo model")
    parser.add_argument(
        "--resume",
        nargs="?",
        const="",
        metavar="ID",
        help="reopen a saved session: the given one, or the most recent",
    )
    parser.add_argument("--db", metavar="PATH", help="session database (default: XDG data dir)")
    parser.add_argument(
        "--gateway-cmd",
        metavar="CMD",
        help="run against a gateway in a child process started with CMD, speaking JSON-RPC on "
        'its stdio (e.g. "desk gateway --stdio --demo"); the server flags then belong to CMD',
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


def _check_url(url: str, source: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"{source} must be an http(s) URL such as http://127.0.0.1:8080/v1")
    return url.rstrip("/")


def parse_options(
    argv: Sequence[str], env: Mapping[str, str], file: Mapping[str, str] | None = None
) -> DeskOptions:
    """Flags, with the environment, then the config file's settings as fallback.

    Args:
        argv: the arguments after the program name.
        env: the environment (``os.environ``).
        file: ``base_url``, ``model``, ``api_key`` from the config file (strings), if any.

    Returns:
        the options.

    Raises:
        ConfigError: a bad flag or value.
        SystemExit: for ``--help`` (code 0), from argparse.
    """
    args = build_parser().parse_args(list(argv))
    base_url, source = args.base_url, "--base-url"
    if not base_url and env.get("OPENAI_BASE_URL"):
        base_url, source = env["OPENAI_BASE_URL"], "OPENAI_BASE_URL"
    file = file or {}
    if not base_url and file.get("base_url"):
        base_url, source = file["base_url"], "config.toml"
    if base_url:
        base_url = _check_url(base_url, source)
    escape_delay = args.escdelay
    if escape_delay is None:
        try:
            escape_delay = _escape_delay(env.get("ESCDELAY", ""))
        except argparse.ArgumentTypeError:
            escape_delay = DEFAULT_ESCAPE_DELAY_MS
    return DeskOptions(
        base_url=base_url or None,
        base_url_source=source if base_url else "",
        model=args.model or env.get("DESK_MODEL") or file.get("model") or None,
        api_key=args.api_key or env.get("OPENAI_API_KEY") or file.get("api_key") or None,
        escape_delay_ms=escape_delay,
        demo=bool(args.demo),
        resume=args.resume is not None,
        resume_id=args.resume or None,
        db_path=args.db or None,
        gateway_cmd=args.gateway_cmd or None,
    )


def choose_server(
    options: DeskOptions,
    *,
    probe_fn: ProbeFn = probe,
    local_servers: Sequence[tuple[str, str]] = LOCAL_SERVERS,
    local_budget_s: float = LOCAL_PROBE_BUDGET_S,
    check_budget_s: float = CHECK_BUDGET_S,
) -> ServerChoice:
    """Decide which server to use (blocking: it probes over the network).

    Args:
        options: flags and environment.
        probe_fn: :func:`desk.probe.probe` or a stand-in.
        local_servers: (name, base URL) probed when nothing is configured, in preference order.
        local_budget_s: time for probing the local servers, in seconds.
        check_budget_s: time for checking a configured server, in seconds.

    Returns:
        the server and model, or a choice with ``base_url=None`` meaning "start the demo".

    Raises:
        ConfigError: the configured server cannot be reached, refuses the key, or names no
            model when none was given.
    """
    if options.demo:
        return ServerChoice(None, None, "--demo")
    if options.base_url:
        url = options.base_url
        (result,) = probe_fn([url], api_key=options.api_key, budget_s=check_budget_s)
        if not result.answered:
            raise ConfigError(f"cannot reach the model server at {url}: {result.error}")
        if result.status in (401, 403):
            raise ConfigError(
                f"the model server at {url} refused the API key ({result.status}); "
                "set OPENAI_API_KEY or pass --api-key"
            )
        model = options.model or (result.models[0] if result.models else None)
        if model is None:
            raise ConfigError(
                f"the model server at {url} lists no models (GET /models: {result.status}); "
                "pass --model"
            )
        return ServerChoice(url, model, options.base_url_source)
    urls = [url for _name, url in local_servers]
    results = probe_fn(urls, api_key=options.api_key, budget_s=local_budget_s)
    for (name, url), result in zip(local_servers, results, strict=True):
        if result.usable:
            return ServerChoice(url, options.model or result.models[0], f"found {name}")
    return ServerChoice(None, None, "no model server configured or found")
