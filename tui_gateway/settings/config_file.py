"""The person's config file, ``$XDG_CONFIG_HOME/desk/config.toml``: reading it, and editing it.

Every entry point (``desk``, ``desk run``, ``desk serve``, ``desk gateway``) reads the file here
(:func:`read_config_file`), and :mod:`tui_gateway.settings.resolution` takes its settings from it.
The file is the person's: keys, tables and comments this code does not know are kept. Writes change
one top-level line of the text (never a re-serialisation that would drop comments), are checked by
parsing the result, and replace the file atomically.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from tui_gateway.atomic import write_text_atomic

CONFIG_NAME = "config.toml"
"""The config file's name inside :func:`config_dir`."""

_TABLE_RE = re.compile(r"^\s*\[")


class SettingsError(Exception):
    """A start-up problem the person can fix; ``message`` is one line, shown without traceback.

    Entry points print it as ``PROG: message`` on stderr and exit with status 2.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ConfigFileError(SettingsError):
    """The config file cannot be read, parsed or updated; ``message`` is one line."""


def _frozen(data: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(data))


@dataclass(frozen=True, slots=True)
class ConfigFile:
    """The config file as read at start.

    Attributes:
        path: where it is (it may not exist).
        data: its parsed content (``{}`` without a file), read-only.
        exists: whether there was a file.
    """

    path: Path
    data: Mapping[str, Any] = field(default_factory=lambda: _frozen({}))
    exists: bool = False


def config_dir(env: Mapping[str, str]) -> Path:
    """``$XDG_CONFIG_HOME/desk``, or ``~/.config/desk`` when that variable is unset or relative.

    A relative or empty ``XDG_CONFIG_HOME`` is ignored, as the XDG Base Directory specification
    asks.
    """
    base = env.get("XDG_CONFIG_HOME", "")
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".config"
    return root / "desk"


def config_path(env: Mapping[str, str]) -> Path:
    """The config file (it may not exist)."""
    return config_dir(env) / CONFIG_NAME


def config_path_shown(env: Mapping[str, str]) -> str:
    """The config file as the welcome names it: ``$XDG_CONFIG_HOME/desk/config.toml`` when
    that variable is in use, else ``~/.config/desk/config.toml``."""
    base = env.get("XDG_CONFIG_HOME", "")
    root = "$XDG_CONFIG_HOME" if base and os.path.isabs(base) else "~/.config"
    return f"{root}/desk/{CONFIG_NAME}"


def read_config(path: Path) -> dict[str, Any]:
    """The file's content, or ``{}`` when there is no file.

    Raises:
        ConfigFileError: the file exists but cannot be read or is not valid TOML.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigFileError(f"cannot read {path}: {one_line(exc)}") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigFileError(f"{path} is not valid TOML: {one_line(exc)}") from None


def read_config_file(env: Mapping[str, str]) -> ConfigFile:
    """The config file ``env`` names (``XDG_CONFIG_HOME``), read once.

    Raises:
        ConfigFileError: the file exists but cannot be read or is not valid TOML.
    """
    path = config_path(env)
    data = read_config(path)
    return ConfigFile(path, _frozen(data), exists=bool(data) or path.is_file())


def toml_string(value: str) -> str:
    """``value`` as a TOML basic string (JSON's escapes are all valid TOML escapes)."""
    return json.dumps(value, ensure_ascii=False)


def with_top_level_key(text: str, key: str, value: str) -> str:
    """``text`` with the top-level ``key = "value"`` line replaced, or added before any table.

    Args:
        text: the file's current text ("" for a new file).
        key: a bare TOML key (letters, digits, ``_`` and ``-``).
        value: the string value.

    Returns:
        the new text; every other line is kept as it was.

    Raises:
        ConfigFileError: the result would not parse to the same data plus the new value (e.g.
            the key is written in an unusual form): the file is then left alone.
        tomllib.TOMLDecodeError: ``text`` itself is not valid TOML.
    """
    if not re.fullmatch(r"[A-Za-z0-9_-]+", key):
        raise ConfigFileError(f"not a bare TOML key: {key!r}")
    before = tomllib.loads(text) if text.strip() else {}
    line = f"{key} = {toml_string(value)}\n"
    lines = text.splitlines(keepends=True)
    end = next((i for i, item in enumerate(lines) if _TABLE_RE.match(item)), len(lines))
    key_re = re.compile(rf"^\s*(?:{re.escape(key)}|\"{re.escape(key)}\")\s*=")
    for index in range(end):
        if key_re.match(lines[index]):
            lines[index] = line
            break
    else:
        head = lines[:end]
        if head and not head[-1].endswith("\n"):
            head[-1] += "\n"
        tail = lines[end:]
        lines = [*head, line, *(["\n"] if tail and head and head[-1].strip() else []), *tail]
    result = "".join(lines)
    try:
        after = tomllib.loads(result)
    except tomllib.TOMLDecodeError:
        after = None
    if after != {**before, key: value}:
        raise ConfigFileError(f"cannot safely change {key} in the config file; edit it by hand")
    return result


def set_config_value(path: Path, key: str, value: str) -> None:
    """Set the top-level ``key`` to the string ``value``, keeping everything else.

    A new file is created private to the person (mode 0600: it may later hold an API key).

    Raises:
        ConfigFileError: the file is not valid TOML, or cannot be read or written.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigFileError(f"cannot read {path}: {one_line(exc)}") from None
    try:
        new_text = with_top_level_key(text, key, value)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigFileError(f"{path} is not valid TOML: {one_line(exc)}") from None
    try:
        write_text_atomic(path, new_text, new_file_mode=0o600)
    except OSError as exc:
        raise ConfigFileError(f"cannot write {path}: {one_line(exc)}") from None


def one_line(exc: BaseException) -> str:
    """An exception as one short line: an OS error's reason, else its text with spaces folded."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return " ".join(str(exc).split()) or type(exc).__name__
