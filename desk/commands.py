"""The desk's entries in Textual's command palette (Ctrl+P).

The app lists its commands (:meth:`PaletteSource.palette_commands`), so the palette offers
exactly what this desk can do right now (e.g. "Toggle console" only where a console exists).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.markup import escape
from textual.screen import Screen


@dataclass(frozen=True, slots=True)
class PaletteCommand:
    """One palette entry.

    Attributes:
        title: what the palette shows and matches, e.g. ``Theme: light``.
        help: one line under the title.
        run: called when chosen (on the UI thread).
        discover: shown in the list before anything is typed (else only when searched).
    """

    title: str
    help: str
    run: Callable[[], object]
    discover: bool = True


@runtime_checkable
class PaletteSource(Protocol):
    """An app that offers palette commands."""

    def palette_commands(self, screen: Screen[object] | None = None) -> list[PaletteCommand]:
        """The commands, in the order they are listed (``screen``: where the palette opened)."""
        ...


class DeskCommands(Provider):
    """Textual command provider over the app's :class:`PaletteCommand` list."""

    def _commands(self) -> list[PaletteCommand]:
        app = self.app
        return app.palette_commands(self.screen) if isinstance(app, PaletteSource) else []

    async def discover(self) -> Hits:
        """The commands shown before anything is typed."""
        for command in self._commands():
            if command.discover:
                yield DiscoveryHit(command.title, command.run, help=escape(command.help))

    async def search(self, query: str) -> Hits:
        """Every command whose title matches ``query`` (fuzzy)."""
        matcher = self.matcher(query)
        for command in self._commands():
            score = matcher.match(command.title)
            if score > 0:
                yield Hit(
                    score,
                    matcher.highlight(command.title),
                    command.run,
                    text=command.title,
                    help=escape(command.help),  # "[focus]" is text, not a style
                )
