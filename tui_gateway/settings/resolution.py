"""One resolution of desk's settings, shared by every entry point.

``desk``, ``desk run``, ``desk serve`` and ``desk gateway`` resolve the same keys the same way:
a flag wins over the environment, which wins over the config file
(``$XDG_CONFIG_HOME/desk/config.toml``, :mod:`tui_gateway.settings.config_file`), which wins over
the default. Each value keeps where it came from (:class:`Origin`), so a screen can say "window
2,048 from config.toml".

===================  ======================  =======================  ====================
setting              flag                    environment              config key
===================  ======================  =======================  ====================
server root          ``--base-url URL``      ``OPENAI_BASE_URL``      ``base_url``
model                ``--model NAME``        ``DESK_MODEL``           ``model``
API key              ``--api-key KEY``       ``OPENAI_API_KEY``       ``api_key``
session database     ``--db PATH|URL``       ``DESK_DB``              ``db``
context window       ``--context-window N``  ``DESK_CONTEXT_WINDOW``  ``context_window``
workspace            ``--workspace DIR``     ``DESK_WORKSPACE``       ``workspace``
server nice                                  ``DESK_SERVER_NICE``     ``server_nice``
Enter while busy                                                      ``busy_input``
the stop key                                                          ``stop_key``
child agent depth                                                     ``delegate_depth``
child agents at once                                                  ``delegate_width``
tool definitions                                                      ``tools``
MCP servers          ``--mcp NAME=CMD...``                           ``[mcp_servers.NAME]``
schedules                                                             ``[schedules.NAME]``
===================  ======================  =======================  ====================

``busy_input`` is ``"queue"`` (the default: Enter while a turn runs queues the prompt) or
``"steer"`` (Enter steers the running turn); the other is one key away in the desk.
``stop_key`` names the desk's stop key (Ctrl+C always stops too): one of Textual's key names,
``"escape"`` by default (``"esc"`` reads as it; ``"ctrl+g"``, ``"f9"``...), or one key twice,
``"escape escape"``, for a double press (:func:`parse_stop_key`); a name Textual gives no key is
a bad value.
``server_nice`` (0-19, default 10; 0 leaves it alone) is how far a model server on this machine
yields the CPU to desk (:mod:`tui_gateway.servers.server_yield`).
``delegate_depth`` (default 2; 0 turns delegation off) and ``delegate_width`` (default 4) bound
the child agents of the ``delegate`` tool. ``tools`` is ``"auto"`` (the default: the tool
definitions go compact when whole they would take more than a tenth of the window), ``"full"``,
``"compact"``, or ``"off"`` (no tools offered at all; MCP servers are not started).
``--mcp`` may be given several times; each adds a server for the run, replacing a table of the
same name.

An empty flag or variable counts as not given; relative paths (``db``, ``workspace``) start
from the working directory wherever they were given. A bad value raises :class:`SettingsError`
with one line naming the flag, the variable, or the file and its key; a bad value below one
that wins is not read. Keys of the file not resolved here are kept (:attr:`Settings.other_keys`);
of those, ``sandbox`` is checked here too (one of ``workspace-write``, ``read-only``, ``off``),
so a bad one is refused before a screen is drawn.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final, Literal, TypeVar
from urllib.parse import urlsplit

from agent.home_path import expand_home, unknown_home
from agent.store import default_db_path
from tui_gateway.settings.config_file import CONFIG_NAME, ConfigFile, SettingsError
from tui_gateway.settings.key_names import parse_stop_key
from tui_gateway.settings.mcp_settings import McpServerSettings, parse_mcp_flag, parse_mcp_servers
from tui_gateway.settings.schedule_settings import ScheduleSettings, parse_schedules

__all__ = [
    "BusyInput",
    "ToolsSetting",
    "DEFAULT_STOP_KEY",
    "FILE_KEYS",
    "FLAGS",
    "ENVIRONMENT",
    "Origin",
    "SettingKey",
    "Settings",
    "SettingsError",
    "Source",
    "StoreDefault",
    "parse_stop_key",
    "resolve_settings",
]

DEFAULT_STOP_KEY: Final = "escape"
"""The stop key when none is configured."""

SERVER_NICE: Final = 10
"""The group nice a local model server yields at while desk runs, when none is configured."""

SettingKey = Literal[
    "base_url",
    "model",
    "api_key",
    "db",
    "context_window",
    "workspace",
    "demo",
    "busy_input",
    "stop_key",
    "delegate_depth",
    "delegate_width",
    "tools",
    "server_nice",
]
"""The settings every entry point takes (``demo`` is a flag only; ``busy_input``,
``stop_key``, the ``delegate_*`` limits and ``tools`` are config-file keys only)."""

ToolsSetting = Literal["auto", "full", "compact", "off"]
"""How the model is offered tools: definitions as the window suits, whole, compact, or none."""

BusyInput = Literal["queue", "steer"]
"""What Enter does while a turn runs: queue the prompt, or steer the running turn."""

FLAGS: Final[Mapping[SettingKey, str]] = MappingProxyType(
    {
        "base_url": "--base-url",
        "model": "--model",
        "api_key": "--api-key",
        "db": "--db",
        "context_window": "--context-window",
        "workspace": "--workspace",
        "demo": "--demo",
    }
)
"""The flag of each setting."""

ENVIRONMENT: Final[Mapping[SettingKey, str]] = MappingProxyType(
    {
        "base_url": "OPENAI_BASE_URL",
        "model": "DESK_MODEL",
        "api_key": "OPENAI_API_KEY",
        "db": "DESK_DB",
        "context_window": "DESK_CONTEXT_WINDOW",
        "workspace": "DESK_WORKSPACE",
        "server_nice": "DESK_SERVER_NICE",
    }
)
"""The environment variable of each setting that has one."""

FILE_KEYS: Final[frozenset[str]] = frozenset(
    {
        "base_url",
        "model",
        "api_key",
        "db",
        "context_window",
        "workspace",
        "mcp_servers",
        "busy_input",
        "stop_key",
        "delegate_depth",
        "delegate_width",
        "tools",
        "schedules",
        "server_nice",
    }
)
"""The config file's keys resolved here; every other key is kept in ``Settings.other_keys``."""


class Source(StrEnum):
    """Where a setting's value came from."""

    FLAG = "flag"
    ENVIRONMENT = "environment"
    FILE = "config file"
    DEFAULT = "default"


class StoreDefault(StrEnum):
    """Where sessions go when no ``db`` is given: the entry point's choice."""

    USER_DATA = "user data"
    """``$XDG_DATA_HOME/desk/desk.db`` (``desk``)."""
    MEMORY = "memory"
    """Nowhere: sessions stay in memory (``desk run``, ``desk serve``, ``desk gateway``)."""


@dataclass(frozen=True, slots=True)
class Origin:
    """Where one setting's value came from.

    Attributes:
        source: flag, environment, config file, or default.
        name: the flag (``--context-window``), the variable (``DESK_CONTEXT_WINDOW``), or the
            file's key (``context_window``); "" for a default.
        file: the config file, for :attr:`Source.FILE`.
    """

    source: Source = Source.DEFAULT
    name: str = ""
    file: Path | None = None

    @property
    def label(self) -> str:
        """Short text for a screen: ``--model``, ``DESK_MODEL``, ``config.toml`` or ``default``."""
        if self.source is Source.FILE:
            return self.file.name if self.file is not None else CONFIG_NAME
        if self.source is Source.DEFAULT:
            return "default"
        return self.name

    @property
    def where(self) -> str:
        """The value's place as an error names it: ``--model``, or ``/path/config.toml: model``."""
        if self.source is Source.FILE:
            return f"{self.file or CONFIG_NAME}: {self.name}"
        return self.name or "default"


DEFAULT_ORIGIN = Origin()
"""The origin of a setting nobody gave."""


def _frozen(data: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(data))


@dataclass(frozen=True, slots=True)
class Settings:
    """desk's settings, resolved (see the module docstring for precedence).

    Attributes:
        base_url: the model server root without a trailing ``/`` (``http://HOST:PORT/v1``), or
            None when none is configured.
        model: the model name, or None for the server's first.
        api_key: the model server's bearer token, or None (never shown in ``repr``).
        db: the session database (a file path or a URL such as ``sqlite:///PATH``), or None to
            keep sessions in memory only.
        context_window: the model's context window in tokens (> 0), or None to ask the server.
        workspace: the absolute directory tool calls run in.
        demo: run the built-in demo model instead of any configured server (``--demo``).
        busy_input: what Enter does while a turn runs (``queue`` or ``steer``).
        stop_key: the desk's stop key as :func:`parse_stop_key` writes it (``escape``, or
            ``escape escape`` for a double press).
        delegate_depth: how deep child agents may nest (0: no ``delegate`` tool).
        delegate_width: most child agents one agent runs at once.
        tools: how tools are offered (``auto``, ``full``, ``compact``, or ``off``).
        server_nice: the group nice, 0-19, a model server on this machine in another session
            yields at while desk runs (0: left alone).
        mcp_servers: the config file's ``[mcp_servers.NAME]`` tables by name, in file order,
            then the ``--mcp`` servers (a flag's server replaces a table of its name).
        schedules: the config file's ``[schedules.NAME]`` tables by name, in file order
            (:mod:`tui_gateway.settings.schedule_settings`).
        other_keys: the config file's top-level keys not resolved here (``theme``...), as read.
        config_file: the config file that was read (it may not exist), or None for none.
        origins: where each setting came from; :meth:`origin` reads it.
    """

    base_url: str | None = None
    model: str | None = None
    api_key: str | None = field(default=None, repr=False)
    db: str | None = None
    context_window: int | None = None
    workspace: Path = field(default_factory=Path.cwd)
    demo: bool = False
    busy_input: BusyInput = "queue"
    stop_key: str = DEFAULT_STOP_KEY
    delegate_depth: int = 2
    delegate_width: int = 4
    tools: ToolsSetting = "auto"
    server_nice: int = SERVER_NICE
    mcp_servers: Mapping[str, McpServerSettings] = field(default_factory=lambda: _frozen({}))
    schedules: Mapping[str, ScheduleSettings] = field(default_factory=lambda: _frozen({}))
    other_keys: Mapping[str, Any] = field(default_factory=lambda: _frozen({}))
    config_file: Path | None = None
    origins: Mapping[SettingKey, Origin] = field(default_factory=lambda: MappingProxyType({}))

    def origin(self, key: SettingKey) -> Origin:
        """Where ``key``'s value came from (:data:`DEFAULT_ORIGIN` when nobody gave it)."""
        return self.origins.get(key, DEFAULT_ORIGIN)


T = TypeVar("T")
Check = Callable[[object, Origin], T | None]
"""Turns a raw value (a flag's or variable's text, or a TOML value) into the setting's value;
None means "not given" (an empty string); raises :class:`SettingsError` naming ``origin.where``."""


def resolve_settings(
    flags: Mapping[SettingKey, str | bool | None],
    env: Mapping[str, str],
    file: ConfigFile | None,
    *,
    store_default: StoreDefault,
    cwd: Path | None = None,
    mcp_flags: Sequence[str] = (),
) -> Settings:
    """Resolve every setting: flag, then environment, then config file, then default.

    Args:
        flags: the parsed flags by setting (None or "" when not given; ``demo`` a bool).
        mcp_flags: the ``--mcp NAME=COMMAND...`` values, in order.
        env: the environment (``os.environ``).
        file: the config file read at start, or None to read none.
        store_default: where sessions go when no ``db`` is given.
        cwd: the directory relative paths start from (default: the process's).

    Returns:
        the settings.

    Raises:
        SettingsError: a bad value (a URL that is not http(s), a window that is not a positive
            whole number, a workspace that is not a directory, a file value of the wrong
            type...), one line naming its flag, variable, or file and key.
    """
    here = Path.cwd() if cwd is None else cwd
    data: Mapping[str, Any] = file.data if file is not None else {}
    path = file.path if file is not None else None
    origins: dict[SettingKey, Origin] = {}

    def first(key: SettingKey, check: Check[T]) -> T | None:
        candidates: list[tuple[object, Origin]] = []
        if key in FLAGS:
            candidates.append((flags.get(key), Origin(Source.FLAG, FLAGS[key])))
        if key in ENVIRONMENT:
            variable = ENVIRONMENT[key]
            candidates.append((env.get(variable), Origin(Source.ENVIRONMENT, variable)))
        if path is not None:
            candidates.append((data.get(key), Origin(Source.FILE, key, path)))
        for raw, origin in candidates:
            if raw is None:
                continue
            value = check(raw, origin)
            if value is not None:
                origins[key] = origin
                return value
        return None

    base_url = first("base_url", _url)
    model = first("model", _text)
    api_key = first("api_key", _text)
    db = first("db", _database)
    context_window = first("context_window", _window)
    workspace = first("workspace", lambda raw, origin: _directory(raw, origin, here))
    busy_input: BusyInput | None = first("busy_input", _busy_input)
    stop_key = first("stop_key", _stop_key)
    depth = first("delegate_depth", lambda raw, origin: _count(raw, origin, 0, 8))
    width = first("delegate_width", lambda raw, origin: _count(raw, origin, 1, 32))
    tools: ToolsSetting | None = first("tools", _tools)
    nice = first("server_nice", _nice)
    if db is None and store_default is StoreDefault.USER_DATA:
        db = str(default_db_path())
    demo = bool(flags.get("demo"))
    if demo:
        origins["demo"] = Origin(Source.FLAG, FLAGS["demo"])
    if path is not None and "sandbox" in data:  # kept in other_keys; checked before the screen
        _sandbox(data["sandbox"], Origin(Source.FILE, "sandbox", path))
    mcp_servers = dict(parse_mcp_servers(data.get("mcp_servers"), path) if path else {})
    for text in mcp_flags:
        server = parse_mcp_flag(text)
        mcp_servers.pop(server.name, None)
        mcp_servers[server.name] = server
    return Settings(
        base_url=base_url,
        model=model,
        api_key=api_key,
        db=db,
        context_window=context_window,
        workspace=workspace if workspace is not None else here,
        demo=demo,
        busy_input="queue" if busy_input is None else busy_input,
        stop_key=DEFAULT_STOP_KEY if stop_key is None else stop_key,
        delegate_depth=2 if depth is None else depth,
        delegate_width=4 if width is None else width,
        tools="auto" if tools is None else tools,
        server_nice=SERVER_NICE if nice is None else nice,
        mcp_servers=MappingProxyType(mcp_servers),
        schedules=parse_schedules(data.get("schedules"), path, here) if path else _frozen({}),
        other_keys=_frozen({k: v for k, v in data.items() if k not in FILE_KEYS}),
        config_file=path,
        origins=MappingProxyType(origins),
    )


def _text(raw: object, origin: Origin) -> str | None:
    if not isinstance(raw, str):
        raise SettingsError(f"{origin.where} must be a string")
    return raw.strip() or None


def _database(raw: object, origin: Origin) -> str | None:
    text = _text(raw, origin)
    if text is not None and (unknown := unknown_home(text)) is not None:
        raise SettingsError(f"{origin.where}: {text!r} starts with {unknown}: no such home here")
    return text


def _url(raw: object, origin: Origin) -> str | None:
    text = _text(raw, origin)
    if text is None:
        return None
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        example = "http://127.0.0.1:8080/v1"
        raise SettingsError(f"{origin.where} must be an http(s) URL like {example}, not {text!r}")
    return text.rstrip("/")


def _window(raw: object, origin: Origin) -> int | None:
    what = f"{origin.where} must be a positive whole number of tokens (e.g. 8192)"
    if isinstance(raw, str) and origin.source is not Source.FILE:  # TOML has its own integers
        if not raw.strip():
            return None
        try:
            value = int(raw.strip())
        except ValueError:
            raise SettingsError(f"{what}, not {raw.strip()!r}") from None
    elif isinstance(raw, int) and not isinstance(raw, bool):
        value = raw
    else:
        raise SettingsError(f"{what}, not {raw!r}")
    if value < 1:
        raise SettingsError(f"{what}, not {value}")
    return value


def _busy_input(raw: object, origin: Origin) -> BusyInput | None:
    text = _text(raw, origin)
    if text is None:
        return None
    if text == "queue":
        return "queue"
    if text == "steer":
        return "steer"
    raise SettingsError(f'{origin.where} must be "queue" or "steer", not {text!r}')


_TOOLS: Final[tuple[ToolsSetting, ...]] = ("auto", "full", "compact", "off")


def _tools(raw: object, origin: Origin) -> ToolsSetting | None:
    text = _text(raw, origin)
    if text is None:
        return None
    for value in _TOOLS:
        if text == value:
            return value
    named = ", ".join(f'"{value}"' for value in _TOOLS)
    raise SettingsError(f"{origin.where} must be one of {named}, not {text!r}")


def _sandbox(raw: object, origin: Origin) -> None:
    """Refuse a ``sandbox`` value that names no mode (:data:`agent.tools.sandbox.MODES`)."""
    from agent.tools.sandbox import MODES

    if raw not in MODES:
        raise SettingsError(f"{origin.where} must be one of {', '.join(MODES)}, not {raw!r}")


def _stop_key(raw: object, origin: Origin) -> str | None:
    text = _text(raw, origin)
    if text is None:
        return None
    try:
        key, double = parse_stop_key(text)
    except ValueError as exc:  # its line names the setting already: name it once, placed
        said = str(exc)
        line = (
            f"{origin.where}{said.removeprefix('stop_key')}"
            if said.startswith("stop_key")
            else f"{origin.where}: {said}"
        )
        raise SettingsError(line) from None
    return f"{key} {key}" if double else key


def _nice(raw: object, origin: Origin) -> int | None:
    what = f"{origin.where} must be a whole number from 0 to 19"
    value = raw
    if isinstance(raw, str) and origin.source is not Source.FILE:  # TOML has its own integers
        if not raw.strip():
            return None
        try:
            value = int(raw.strip())
        except ValueError:
            raise SettingsError(f"{what}, not {raw.strip()!r}") from None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 19:
        raise SettingsError(f"{what}, not {value!r}")
    return value


def _count(raw: object, origin: Origin, low: int, high: int) -> int | None:
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise SettingsError(f"{origin.where} must be a whole number {low}..{high}, not {raw!r}")
    if not low <= raw <= high:
        raise SettingsError(f"{origin.where} must be {low}..{high}, not {raw}")
    return raw


def _directory(raw: object, origin: Origin, cwd: Path) -> Path | None:
    text = _text(raw, origin)
    if text is None:
        return None
    path = Path(os.path.normpath(cwd / expand_home(text)))
    if not path.is_dir():
        raise SettingsError(f"{origin.where} must be an existing directory, not {text!r}")
    return path
