"""The flags the wire commands share: where the model server is, and the gateway's store.

Precedence as in desk: flags, then the environment (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``,
``DESK_MODEL``). ``--demo`` starts the built-in demo model in this process instead. With no
server configured and no ``--demo`` the commands refuse to start (exit 2, one line). With a
server but no model, the server's first model (``GET /models``) is used.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import NoReturn
from urllib.parse import urlsplit

import httpx

from agent.provider.client import ProviderConfig
from agent.store import StoreError, open_store
from tui_gateway.gateway import Gateway, GatewayConfig

MODELS_TIMEOUT_S = 5.0
"""How long asking the server for its models may take, in seconds."""


class UsageError(Exception):
    """A problem with the command line or the configuration; ``message`` is one line."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see {self.prog} --help)")


def parser(prog: str, description: str) -> argparse.ArgumentParser:
    """A parser with the shared provider and gateway flags; its errors raise UsageError."""
    p = _Parser(prog=prog, description=description)
    p.add_argument("--base-url", help="model server root ending in /v1 (env OPENAI_BASE_URL)")
    p.add_argument("--model", help="model name (env DESK_MODEL; default: the server's first)")
    p.add_argument("--api-key", help="the model server's bearer token (env OPENAI_API_KEY)")
    p.add_argument("--demo", action="store_true", help="run the built-in demo model")
    p.add_argument("--db", metavar="PATH", help="session database (default: keep in memory)")
    p.add_argument("--no-tools", action="store_true", help="offer the model no tools")
    return p


@dataclass(frozen=True, slots=True)
class Provider:
    """The resolved model server.

    Attributes:
        config: what the gateway's turns use.
        demo: True when it is the demo model started here.
    """

    config: ProviderConfig
    demo: bool


@contextlib.contextmanager
def provider_from(args: argparse.Namespace, env: Mapping[str, str]) -> Iterator[Provider]:
    """The model server the flags and environment name (the demo one lives for the block).

    Raises:
        UsageError: nothing configured, a bad URL, or no model can be found.
    """
    if args.demo:
        from demo_model.server import DemoModelServer

        with DemoModelServer() as server:
            model = args.model or server.config.model
            yield Provider(ProviderConfig(base_url=server.base_url, model=model), demo=True)
        return
    base_url = args.base_url or env.get("OPENAI_BASE_URL") or ""
    if not base_url:
        raise UsageError("no model server: pass --base-url (or set OPENAI_BASE_URL) or --demo")
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UsageError(f"the base URL must be http(s)://HOST[:PORT]/v1, not {base_url!r}")
    base_url = base_url.rstrip("/")
    api_key = args.api_key or env.get("OPENAI_API_KEY") or None
    model = args.model or env.get("DESK_MODEL") or _first_model(base_url, api_key)
    yield Provider(ProviderConfig(base_url=base_url, model=model, api_key=api_key), demo=False)


def _first_model(base_url: str, api_key: str | None) -> str:
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        response = httpx.get(base_url + "/models", headers=headers, timeout=MODELS_TIMEOUT_S)
        response.raise_for_status()
        return str(response.json()["data"][0]["id"])
    except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError) as exc:
        raise UsageError(
            f"cannot ask {base_url} for its models ({type(exc).__name__}); pass --model"
        ) from None


def build_gateway(
    args: argparse.Namespace,
    provider: Provider,
    *,
    max_sessions: int = 8,
    approvals: bool = True,
) -> Gateway:
    """A gateway over ``provider`` with the store ``--db`` names (none: memory only).

    Args:
        args: the parsed flags.
        provider: the model server.
        max_sessions: live sessions kept (see :class:`GatewayConfig`).
        approvals: ask before ``shell`` and ``write_file`` calls.

    Raises:
        UsageError: the database cannot be opened.
    """
    store = None
    if args.db:
        try:
            store = open_store(args.db)
        except StoreError as exc:
            raise UsageError(f"cannot open the database: {exc.message}") from None
    settings = GatewayConfig(
        provider=provider.config,
        tools=not args.no_tools,
        max_sessions=max_sessions,
        approvals=approvals,
    )
    return Gateway(settings, store=store)


def fail(prog: str, message: str, code: int = 2) -> int:
    """Print ``prog: message`` on stderr (one line); returns ``code``."""
    print(f"{prog}: {message}", file=sys.stderr, flush=True)
    return code


def parse(p: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """Parse ``argv`` (UsageError on a bad flag; SystemExit 0 for --help)."""
    return p.parse_args(list(argv))
