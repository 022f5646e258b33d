"""Colour themes: loaded from TOML files at start, chosen with ``/theme`` or the palette, and the
choice saved in the config file (see :mod:`desk.theme_files` and :mod:`desk.user_config`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from textual.theme import Theme

from desk.controllers.ports import Notify
from desk.theme_files import DEFAULT_THEME, load_themes, ordered_names, theme_dirs
from desk.user_config import ConfigFileError, config_path, read_config, set_config_value

FALLBACK_THEME = "textual-dark"
"""Textual's own theme, used when not even the default theme file could be loaded."""

PROBLEMS_TIMEOUT_S = 15.0
"""How long the toast listing what could not be loaded stays, in seconds."""


class ThemeHost(Protocol):
    """Where themes are registered and used (the app)."""

    theme: str

    @property
    def available_themes(self) -> dict[str, Theme]:
        """Every registered theme by name."""
        ...

    def register_theme(self, theme: Theme) -> None:
        """Make ``theme`` available by its name."""
        ...


class ThemeController:
    """Loads, offers and saves the colour theme; reads the environment once.

    Args:
        host: the app.
        env: the environment (``XDG_CONFIG_HOME`` says where the config and themes are).
        notify: shows a toast.
    """

    def __init__(self, host: ThemeHost, env: Mapping[str, str], *, notify: Notify) -> None:
        self._host = host
        self._notify = notify
        self.config_path = config_path(env)
        """The config file the theme choice is saved in."""
        self.problems: list[str] = []
        """Load errors of theme files and of the config file, one line each (shown once)."""
        loaded = load_themes(theme_dirs(env))
        self.theme_files = dict(loaded.origins)
        """The themes loaded from TOML files (desk's and the person's) and their files."""
        for theme in loaded.themes.values():
            host.register_theme(theme)
        self.problems += loaded.errors
        host.theme = self._configured()

    def _configured(self) -> str:
        wanted = DEFAULT_THEME
        try:
            configured = read_config(self.config_path).get("theme")
        except ConfigFileError as exc:
            self.problems.append(exc.message)
            configured = None
        if isinstance(configured, str) and configured:
            wanted = configured
        available = self._host.available_themes
        if wanted not in available:
            if wanted != DEFAULT_THEME:
                self.problems.append(f"no theme named {wanted!r}; using the default")
            wanted = DEFAULT_THEME if DEFAULT_THEME in available else FALLBACK_THEME
        return wanted

    def report_problems(self) -> None:
        """Show what could not be loaded, once, in one toast (nothing when all loaded)."""
        if self.problems:
            self._notify(
                "\n".join(self.problems),
                title="Some settings could not be loaded",
                severity="warning",
                timeout=PROBLEMS_TIMEOUT_S,
            )

    @property
    def names(self) -> list[str]:
        """Every registered theme, desk's own first."""
        return ordered_names(self._host.available_themes)

    @property
    def current(self) -> str:
        """The theme in use."""
        return self._host.theme

    def listing(self) -> str:
        """``/theme`` with no name: every theme, the current one marked."""
        current = self._host.theme
        return ", ".join(f"{n} (current)" if n == current else n for n in self.names)

    def choose(self, name: str) -> bool:
        """Use theme ``name`` and save the choice in the config file.

        Returns:
            False when there is no such theme (a notice says so).
        """
        if name not in self._host.available_themes:
            known = ", ".join(self.names)
            self._notify(f"no theme named {name!r}; themes: {known}", severity="error")
            return False
        self._host.theme = name
        try:
            set_config_value(self.config_path, "theme", name)
        except ConfigFileError as exc:
            self._notify(f"theme {name} is used but not saved: {exc.message}", severity="warning")
            return True
        self._notify(f"theme {name} · saved in {self.config_path}", title="Theme")
        return True
