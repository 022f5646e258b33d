"""The shared settings flags on an :mod:`argparse` parser, and loading settings from them.

Every entry point's parser gets the same group (:func:`add_settings_flags`); after parsing,
:func:`load_settings` reads the config file and resolves (:func:`resolve_settings`).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path

from tui_gateway.settings.config_file import read_config_file
from tui_gateway.settings.resolution import (
    FLAGS,
    SettingKey,
    Settings,
    StoreDefault,
    resolve_settings,
)

_DB_DEFAULT = {
    StoreDefault.USER_DATA: "$XDG_DATA_HOME/desk/desk.db",
    StoreDefault.MEMORY: "keep sessions in memory only",
}

_VALUE_KEYS: tuple[SettingKey, ...] = (
    "base_url",
    "model",
    "api_key",
    "db",
    "context_window",
    "workspace",
)


def add_settings_flags(
    parser: argparse.ArgumentParser, *, store_default: StoreDefault, demo: bool = True
) -> None:
    """Add ``--base-url --model --api-key --db --context-window --workspace --mcp`` (and
    ``--demo``).

    The values stay strings (None when not given): :func:`resolve_settings` checks them, so a
    bad flag reads like a bad variable or file value.

    Args:
        parser: the entry point's parser.
        store_default: what ``--db``'s help names as the default.
        demo: add ``--demo`` too.
    """
    group = parser.add_argument_group(
        "settings",
        "Flags win over the environment, which wins over the config file,\n"
        "$XDG_CONFIG_HOME/desk/config.toml (default ~/.config/desk/config.toml).",
    )
    group.add_argument(
        FLAGS["base_url"],
        metavar="URL",
        help="model server root ending in /v1 (env OPENAI_BASE_URL, config base_url)",
    )
    group.add_argument(
        FLAGS["model"],
        metavar="NAME",
        help="model name (env DESK_MODEL, config model; default: the server's first)",
    )
    group.add_argument(
        FLAGS["api_key"],
        metavar="KEY",
        help="the model server's bearer token (env OPENAI_API_KEY, config api_key)",
    )
    group.add_argument(
        FLAGS["db"],
        metavar="PATH|URL",
        help="session database: a file or sqlite:///PATH (env DESK_DB, config db; default: "
        f"{_DB_DEFAULT[store_default]})",
    )
    group.add_argument(
        FLAGS["context_window"],
        metavar="N",
        help="the model's context window in tokens (env DESK_CONTEXT_WINDOW, config "
        "context_window; default: asked of the server)",
    )
    group.add_argument(
        FLAGS["workspace"],
        metavar="DIR",
        help="the directory tool calls run in (env DESK_WORKSPACE, config workspace; "
        "default: the current directory)",
    )
    group.add_argument(
        "--mcp",
        action="append",
        default=[],
        metavar="NAME=COMMAND",
        help="use the MCP server COMMAND (a command line; or an http(s) URL) as NAME for this "
        "run; may be repeated (config [mcp_servers.NAME])",
    )
    if demo:
        group.add_argument(FLAGS["demo"], action="store_true", help="use the built-in demo model")


def flag_values(args: argparse.Namespace) -> dict[SettingKey, str | bool | None]:
    """The settings flags of a namespace parsed by a parser :func:`add_settings_flags` set up."""
    values: dict[SettingKey, str | bool | None] = {
        key: getattr(args, key, None) for key in _VALUE_KEYS
    }
    values["demo"] = bool(getattr(args, "demo", False))
    return values


def load_settings(
    args: argparse.Namespace,
    env: Mapping[str, str],
    *,
    store_default: StoreDefault,
    cwd: Path | None = None,
) -> Settings:
    """Read the config file ``env`` names and resolve the settings with the parsed flags.

    Args:
        args: the parsed flags.
        env: the environment (``os.environ``).
        store_default: where sessions go when no ``db`` is given.
        cwd: the directory relative paths start from (default: the process's).

    Raises:
        SettingsError: the file cannot be read or parsed, or a value is bad (one line).
    """
    return resolve_settings(
        flag_values(args),
        env,
        read_config_file(env),
        store_default=store_default,
        cwd=cwd,
        mcp_flags=mcp_flag_values(args),
    )


def mcp_flag_values(args: argparse.Namespace) -> tuple[str, ...]:
    """The ``--mcp`` values of a namespace parsed by a parser :func:`add_settings_flags` set up."""
    return tuple(getattr(args, "mcp", None) or ())
