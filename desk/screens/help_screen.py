"""The help screen (F1): every key and every slash command, in sections.

The app builds the rows (from its live bindings and :data:`desk.slash.SLASH_COMMANDS`), so the
screen lists what really works; :func:`key_label` writes keys the way people say them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from desk.widgets._css import css_beside

HelpRows = Sequence[tuple[str, str]]
"""(key or command, what it does) pairs of one section."""

_KEY_NAMES = {
    "escape": "Esc",
    "enter": "Enter",
    "pageup": "PgUp",
    "pagedown": "PgDn",
    "up": "Up",
    "down": "Down",
    "tab": "Tab",
    "space": "Space",
    "backspace": "Backspace",
    "delete": "Del",
    "home": "Home",
    "end": "End",
}


CLOSE_KEYS = ("escape", "f1", "q")
"""The keys that close the help screen (Esc also stops a running turn, see
:func:`desk.controllers.help.close_help_on_stop`)."""


def key_label(key: str) -> str:
    """``ctrl+c`` -> ``Ctrl+C``, ``escape`` -> ``Esc``, ``f1`` -> ``F1``, ``shift+enter`` ->
    ``Shift+Enter``."""
    parts = []
    for part in key.split("+"):
        if part in _KEY_NAMES:
            parts.append(_KEY_NAMES[part])
        elif len(part) == 1:
            parts.append(part.upper())
        else:
            parts.append(part[:1].upper() + part[1:])
    return "+".join(parts)


def _table(rows: HelpRows) -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(no_wrap=True, style="bold")
    table.add_column(ratio=1)
    for key, what in rows:
        table.add_row(Text(key), Text(what))
    return table


class HelpScreen(ModalScreen[None]):
    """A modal listing keys and commands; Esc, F1 or Q closes it.

    Args:
        sections: (title, rows) in the order shown.
    """

    DEFAULT_CSS = css_beside(__file__)

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(",".join(CLOSE_KEYS), "close", "Close", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
    ]

    def __init__(self, sections: Sequence[tuple[str, HelpRows]]) -> None:
        super().__init__(id="help")
        self.sections = [(title, list(rows)) for title, rows in sections]
        """The sections shown."""

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box") as box:
            box.border_title = "desk · keys and commands"
            box.border_subtitle = "Esc / F1 closes"
            for title, rows in self.sections:
                yield Static(title, classes="help-section", markup=False)
                yield Static(_table(rows), classes="help-rows")

    def action_close(self) -> None:
        """Close the help."""
        self.dismiss(None)

    def action_page(self, direction: int) -> None:
        """PageDown / PageUp: a page of the help down or up (1 or -1)."""
        box = self.query_one("#help-box", VerticalScroll)
        if direction > 0:
            box.scroll_page_down(animate=False)
        else:
            box.scroll_page_up(animate=False)
