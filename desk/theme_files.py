"""Colour themes as TOML files, loaded into Textual themes.

Textual has no theme-file loader: each ``*.toml`` file is read with :mod:`tomllib` into
``textual.theme.Theme(**data)`` (``name`` defaults to the file's stem) and checked by generating
its colour system, so a bad colour fails here, with the file's name, and not later inside
Textual. Nothing raises: problems are collected as one-line :attr:`ThemeLoad.errors` for the app
to show once.

Where themes are found, in order (a later file with the same ``name`` wins):

1. ``<sys.prefix>/share/desk/themes/``, where a wheel installs the checkout's ``themes/`` (as
   data files: ``[tool.setuptools.data-files] "share/desk/themes" = ["themes/*.toml"]``);
2. ``themes/`` beside the ``desk`` package in a checkout (and an editable install);
3. ``$XDG_CONFIG_HOME/desk/themes/`` (default ``~/.config/desk/themes/``): the person's own.
"""

from __future__ import annotations

import sys
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from textual.theme import Theme

import desk
from desk.user_config import config_dir

DEFAULT_THEME = "dark"
"""The theme used when none is configured (shipped in ``themes/dark.toml``)."""

SHIPPED_THEMES: tuple[str, ...] = ("dark", "light", "high-contrast")
"""The themes desk ships, in the order they are offered."""


@dataclass(slots=True)
class ThemeLoad:
    """The result of loading theme files.

    Attributes:
        themes: loaded themes by name, in the order first seen.
        errors: one line per file that could not be loaded (``"<path>: <why>"``).
        origins: the file each theme came from.
    """

    themes: dict[str, Theme] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    origins: dict[str, Path] = field(default_factory=dict)


def shipped_theme_dirs() -> list[Path]:
    """The folders holding desk's own themes: an installed wheel's, then the checkout's."""
    package = Path(desk.__file__).resolve().parent
    return [Path(sys.prefix) / "share" / "desk" / "themes", package.parent / "themes"]


def user_theme_dir(env: Mapping[str, str]) -> Path:
    """``$XDG_CONFIG_HOME/desk/themes`` (default ``~/.config/desk/themes``)."""
    return config_dir(env) / "themes"


def theme_dirs(env: Mapping[str, str]) -> list[Path]:
    """Every folder searched for themes, in loading order (see the module docstring)."""
    return [*shipped_theme_dirs(), user_theme_dir(env)]


def load_theme_file(path: Path) -> Theme:
    """Read one theme file.

    Args:
        path: a TOML file whose keys are :class:`textual.theme.Theme` fields.

    Returns:
        the theme (its colours already checked).

    Raises:
        ValueError: the file cannot be read or parsed, a field is unknown or missing, or a
            colour is invalid; the message is one line.
    """
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(exc.strerror or str(exc)) from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"not valid TOML: {exc}") from None
    data.setdefault("name", path.stem)
    if not isinstance(data["name"], str) or not data["name"].strip():
        raise ValueError("name must be a non-empty string")
    variables = data.get("variables", {})
    if not isinstance(variables, dict) or not all(
        isinstance(value, str) for value in variables.values()
    ):
        raise ValueError("[variables] must map variable names to colour strings")
    try:
        theme = Theme(**data)
        theme.to_color_system().generate()
    except TypeError as exc:  # unknown or missing field
        raise ValueError(str(exc).replace("Theme.__init__() ", "")) from None
    except Exception as exc:  # a colour Textual cannot parse (ColorParseError and friends)
        raise ValueError(" ".join(str(exc).split()) or type(exc).__name__) from None
    return theme


def load_themes(dirs: Iterable[Path]) -> ThemeLoad:
    """Load every ``*.toml`` file of every folder (missing folders are skipped).

    Args:
        dirs: folders in loading order; a later theme replaces an earlier one of the same name.

    Returns:
        the themes and the errors (never raises).
    """
    result = ThemeLoad()
    seen: set[Path] = set()
    for folder in dirs:
        try:
            files = sorted(folder.glob("*.toml")) if folder.is_dir() else []
        except OSError as exc:
            result.errors.append(f"{folder}: {exc.strerror or exc}")
            continue
        for path in files:
            resolved = path.resolve()
            if resolved in seen:  # the same folder reached twice (checkout == package data)
                continue
            seen.add(resolved)
            try:
                theme = load_theme_file(path)
            except ValueError as exc:
                result.errors.append(f"{path}: {exc}")
                continue
            result.themes[theme.name] = theme
            result.origins[theme.name] = path
    return result


def ordered_names(names: Iterable[str]) -> list[str]:
    """Theme names with desk's shipped themes first (in :data:`SHIPPED_THEMES` order)."""
    names = list(dict.fromkeys(names))
    first = [name for name in SHIPPED_THEMES if name in names]
    return first + sorted(name for name in names if name not in SHIPPED_THEMES)
