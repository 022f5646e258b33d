"""The flags the wire commands share: the settings every entry point takes, and the model server.

The settings (:mod:`tui_gateway.settings.resolution`: ``--base-url --model --api-key --db
--context-window --workspace --demo``) resolve as in desk: flags, then the environment, then
``$XDG_CONFIG_HOME/desk/config.toml``. Without ``--db`` (or ``DESK_DB``, or ``db`` in the file)
sessions are kept in memory only. ``--demo`` starts the built-in demo model in this process
instead: the entry point that offers it (desk's, :mod:`desk.__main__`) passes a
:data:`DemoModel` in, since the gateway never imports the demo model itself. With no server
configured and no ``--demo`` the commands refuse to start (exit 2, one line). With a server but
no model, the server's first model (``GET /models``) is used.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import NoReturn

import httpx

from agent.provider.client import ProviderConfig
from agent.provider.tls import shared_ssl_context
from agent.valid_text import loads
from contract.server_events import ServerState, ServerStatus
from tui_gateway.settings.resolution import Settings, SettingsError, StoreDefault
from tui_gateway.settings.settings_flags import add_settings_flags, load_settings

MODELS_TIMEOUT_S = 5.0
"""How long asking the server for its models may take, in seconds."""


class UsageError(SettingsError):
    """A problem with the command line or the configuration; ``message`` is one line."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see {self.prog} --help)")


def parser(
    prog: str, description: str, *, store_default: StoreDefault = StoreDefault.MEMORY
) -> argparse.ArgumentParser:
    """A parser with the shared settings flags and ``--no-tools``; its errors raise UsageError.

    ``store_default`` is where sessions go without ``--db`` (memory for the wire commands,
    the user's database for ``desk acp``)."""
    p = _Parser(prog=prog, description=description)
    add_settings_flags(p, store_default=store_default)
    p.add_argument("--no-tools", action="store_true", help="offer the model no tools")
    return p


def settings_from(
    args: argparse.Namespace,
    env: Mapping[str, str],
    *,
    store_default: StoreDefault = StoreDefault.MEMORY,
) -> Settings:
    """The settings of the parsed flags, the environment and the config file.

    Raises:
        SettingsError: the config file is unreadable, or a value is bad (one line).
    """
    return load_settings(args, env, store_default=store_default)


@dataclass(frozen=True, slots=True)
class ServedModel:
    """A model server started for the command (the demo model).

    Attributes:
        base_url: its OpenAI-compatible root (``http://127.0.0.1:PORT/v1``).
        model: the model name it answers to.
    """

    base_url: str
    model: str


DemoModel = Callable[[], AbstractContextManager[ServedModel]]
"""Starts the demo model for the block and stops it after (``--demo``)."""

NO_DEMO = "--demo: the demo model comes with desk (run desk COMMAND --demo)"
"""The error when ``--demo`` is asked of an entry point that was given no :data:`DemoModel`."""


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
def provider_from(
    settings: Settings, demo: DemoModel | None = None, *, listed_only: bool = False
) -> Iterator[Provider]:
    """The model server the settings name (the demo one lives for the block).

    Args:
        settings: the command's settings.
        demo: starts the demo model, for ``--demo`` (None: this entry point has none).
        listed_only: refuse a model the server does not list (``GET /models``), as the desk
            does; a server that lists none, or does not answer that, is taken at its word.

    Raises:
        UsageError: nothing configured, no model can be found, ``--demo`` without ``demo``,
            or (``listed_only``) a model the server does not list (the message names what it
            lists, as the desk's).
    """
    if settings.demo:
        if demo is None:
            raise UsageError(NO_DEMO)
        with demo() as served:
            model = settings.model or served.model
            if listed_only and settings.model:
                refuse_unlisted(served.base_url, None, model)
            yield Provider(ProviderConfig(base_url=served.base_url, model=model), demo=True)
        return
    base_url = settings.base_url
    if not base_url:
        raise UsageError(
            "no model server: pass --base-url (or set OPENAI_BASE_URL, or base_url in "
            "config.toml) or --demo"
        )
    api_key = settings.api_key
    model = settings.model or _first_model(base_url, api_key)
    if listed_only and settings.model:
        refuse_unlisted(base_url, api_key, model)
    yield Provider(ProviderConfig(base_url=base_url, model=model, api_key=api_key), demo=False)


def refuse_unlisted(base_url: str, api_key: str | None, model: str) -> None:
    """Raise when the server at ``base_url`` lists models and ``model`` is not one of them.

    Raises:
        UsageError: the desk's own line (``the model server at URL does not list model
            'NAME'; it lists a, b``). Nothing is raised when ``GET /models`` fails or lists
            nothing: the server is taken at its word, as the desk takes it.
    """
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        response = httpx.get(
            base_url + "/models",
            headers=headers,
            timeout=MODELS_TIMEOUT_S,
            verify=shared_ssl_context(),
        )
        response.raise_for_status()
        models = [str(entry["id"]) for entry in loads(response.content)["data"]]
    except (httpx.HTTPError, ValueError, KeyError, TypeError):
        return
    status = ServerStatus(ServerState.READY, base_url, model, models)
    problem = status.model_problem(model)
    if problem:
        raise UsageError(problem)


def _first_model(base_url: str, api_key: str | None) -> str:
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        response = httpx.get(
            base_url + "/models",
            headers=headers,
            timeout=MODELS_TIMEOUT_S,
            verify=shared_ssl_context(),
        )
        response.raise_for_status()
        return str(loads(response.content)["data"][0]["id"])
    except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError) as exc:
        raise UsageError(
            f"cannot ask {base_url} for its models ({type(exc).__name__}); pass --model"
        ) from None


def fail(prog: str, message: str, code: int = 2) -> int:
    """Print ``prog: message`` on stderr (one line); returns ``code``."""
    print(f"{prog}: {message}", file=sys.stderr, flush=True)
    return code


def parse(p: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """Parse ``argv`` (UsageError on a bad flag; SystemExit 0 for --help)."""
    return p.parse_args(list(argv))
