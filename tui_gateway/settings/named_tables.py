"""Tables of named tables in the config file (``[mcp_servers.NAME]``, ``[schedules.NAME]``),
checked one way: the section is a table, each name is letters, digits, ``_`` and ``-``, each
entry is a table, and a bad field's error names the file, the entry and the field."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import Any

from tui_gateway.settings.config_file import ConfigFileError

NAME_RE = re.compile(r"[A-Za-z0-9_-]+")
"""What an entry's name may be: letters, digits, ``_`` and ``-``."""

Bad = Callable[[str, str], ConfigFileError]
"""``bad(field, what)``: the error for a field that is not ``what``
(``.../config.toml: schedules.nightly.cron must be ...``)."""


def named_tables(
    value: Any, path: Path, section: str, noun: str
) -> Iterator[tuple[str, dict[str, Any], Bad]]:
    """Each entry of the ``section`` table of the file at ``path``, in the file's order: its
    name, its table, and the maker of its fields' errors. Nothing when ``value`` is None (the
    file has no such table).

    Args:
        value: ``data[section]`` as read, or None.
        path: the config file, named in errors.
        section: the table's key (``mcp_servers``, ``schedules``).
        noun: what an entry is, in errors (``server``, ``schedule``).

    Raises:
        ConfigFileError: the section is not a table, a name is bad, or an entry is not a table.
    """
    if value is None:
        return
    if not isinstance(value, dict):
        raise ConfigFileError(f"{path}: {section} must be a table of [{section}.NAME]")
    for name, table in value.items():
        key = f"{section}.{name}"
        if not NAME_RE.fullmatch(name):
            raise ConfigFileError(
                f"{path}: {key}: a {noun} name is letters, digits, '_' and '-' only"
            )
        if not isinstance(table, dict):
            raise ConfigFileError(f"{path}: {key} must be a table ([{key}])")
        yield name, table, field_error(path, key)


def field_error(path: Path, key: str) -> Bad:
    """The maker of errors for the fields of the entry ``key`` of the file at ``path``."""

    def bad(item: str, what: str) -> ConfigFileError:
        return ConfigFileError(f"{path}: {key}.{item} must be {what}")

    return bad


def refuse_unknown(
    table: dict[str, Any], known: Collection[str], path: Path, key: str, noun: str
) -> None:
    """Refuse a field of ``table`` not in ``known``.

    Raises:
        ConfigFileError: naming the first unknown field and the known ones.
    """
    unknown = sorted(k for k in table if k not in known)
    if unknown:
        names = ", ".join(sorted(known))
        raise ConfigFileError(f"{path}: {key}.{unknown[0]} is not a {noun} field ({names})")


def optional_str(table: dict[str, Any], item: str, bad: Bad) -> str | None:
    """``table[item]`` without surrounding blanks, or None when absent.

    Raises:
        ConfigFileError: present, but not a string, or blank.
    """
    value = table.get(item)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise bad(item, "a non-empty string")
    return value.strip()
