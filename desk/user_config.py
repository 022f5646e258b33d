"""desk's own keys in the person's config file, on top of :mod:`tui_gateway.settings.config_file`.

The file (``$XDG_CONFIG_HOME/desk/config.toml``) is read and edited in
:mod:`tui_gateway.settings.config_file`, and the settings every entry point shares (``base_url``,
``model``, ``api_key``, ``db``, ``context_window``, ``workspace``, ``[mcp_servers.NAME]``)
resolve in :mod:`tui_gateway.settings.resolution`. Only the desk reads the keys here: ``theme`` (the
chosen colour theme, saved by ``/theme``) and ``escdelay`` (milliseconds before a lone ESC is
the Esc key; ``--escdelay`` and ``ESCDELAY`` override it). The file's access functions are
re-exported for the desk's modules.
"""

from __future__ import annotations

from tui_gateway.settings.config_file import (
    CONFIG_NAME,
    ConfigFile,
    ConfigFileError,
    config_dir,
    config_path,
    config_path_shown,
    read_config,
    set_config_value,
    toml_string,
    with_top_level_key,
)

__all__ = [
    "CONFIG_NAME",
    "DEFAULT_ESCAPE_DELAY_MS",
    "DESK_KEYS",
    "MAX_ESCAPE_DELAY_MS",
    "ConfigFileError",
    "config_dir",
    "config_path",
    "config_path_shown",
    "file_escape_delay",
    "read_config",
    "set_config_value",
    "toml_string",
    "with_top_level_key",
]

DESK_KEYS: tuple[str, ...] = ("theme", "escdelay")
"""The config file's keys only the desk reads."""

DEFAULT_ESCAPE_DELAY_MS = 10
"""Default wait, in milliseconds, before a lone ESC byte counts as the Esc key."""

MAX_ESCAPE_DELAY_MS = 2000
"""Largest accepted ``escdelay``, in milliseconds."""


def file_escape_delay(file: ConfigFile) -> int | None:
    """The file's ``escdelay`` in milliseconds, or None when it sets none.

    Raises:
        ConfigFileError: it is not a whole number of milliseconds in 1..2000 (one line naming
            the file and the key).
    """
    value = file.data.get("escdelay")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigFileError(
            f"{file.path}: escdelay must be a whole number of milliseconds, not {value!r}"
        )
    if not 1 <= value <= MAX_ESCAPE_DELAY_MS:
        raise ConfigFileError(
            f"{file.path}: escdelay must be 1..{MAX_ESCAPE_DELAY_MS} ms, not {value}"
        )
    return value
