"""The command palette's entries (Ctrl+P) and the model choice they offer.

The palette lists exactly what this desk can do right now: the desk's actions, every theme
(desk's own listed unasked, the rest when searched), the server's models (``Model: NAME`` sets
the model of the session shown for its next turns), then Textual's system commands.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
from typing import TYPE_CHECKING

from textual.app import SystemCommand

from contract.errors import GatewayError
from desk.commands import PaletteCommand
from desk.config import ConnectionInfo
from desk.controllers.ports import Notify
from desk.controllers.themes import ThemeController
from desk.widgets.status_bar import StatusBar

if TYPE_CHECKING:
    from contract.ports import DeskGateway
    from desk.controllers.view import ShownSession

ACTIONS: tuple[tuple[str, str, str], ...] = (
    ("new_session", "New session", "start an empty session"),
    ("resume_session", "Resume a session", "reopen a saved session"),
    ("toggle_sessions", "Sessions", "show or hide the sessions sidebar (Ctrl+B)"),
    (
        "compress",
        "Compress the conversation",
        "summarise the middle of this session now (/compress [focus])",
    ),
    ("toggle_console", "Toggle console", "show or hide the console panel (F2)"),
    ("stop_command", "Stop", "stop the running turn (Esc)"),
    ("export", "Export as Markdown", "write this session to ./desk-<session>-<date>.md"),
    ("help", "Help", "every key and command (F1)"),
)
"""(action, title, help) of the desk's own entries, in the order they are listed."""

PALETTE_STOP_REASON = "stopped from the command palette"
"""The reason the palette's Stop entry gives."""

HIDDEN_SYSTEM_COMMANDS = frozenset({"Quit", "Keys"})
"""Textual's system commands the desk says better itself (Ctrl+Q, F1)."""


class PaletteController:
    """Builds the palette's entries; sets a session's model.

    Args:
        gateway: the gateway (``session_set_model`` where it has one).
        themes: the themes offered.
        status: the status bar (the model shown).
        connection: the model server (its model is the default).
        run_action: runs one of the app's actions by name.
        stop: the Stop entry (a command's stop, not the stop key's).
        notify: shows a toast.
        models: the models the server lists (empty until it answered).
    """

    def __init__(
        self,
        gateway: DeskGateway,
        *,
        themes: ThemeController,
        status: StatusBar,
        connection: ConnectionInfo,
        run_action: Callable[[str], object],
        stop: Callable[[], object],
        notify: Notify,
        models: Callable[[], tuple[str, ...]] = tuple,
    ) -> None:
        self._gateway = gateway
        self._themes = themes
        self._status = status
        self._connection = connection
        self._run_action = run_action
        self._stop = stop
        self._notify = notify
        self._models = models

    @property
    def model(self) -> str:
        """The model the shown session talks to."""
        return self._status.model or self._connection.model

    def commands(
        self, view: ShownSession | None, system: Iterable[SystemCommand]
    ) -> list[PaletteCommand]:
        """The palette's entries: the desk's own, then Textual's ``system`` commands.

        Args:
            view: the session shown (a model chosen applies to it).
            system: the screen's system commands.
        """
        commands = [
            PaletteCommand(
                title,
                help_text,
                self._stop if name == "stop_command" else partial(self._run_action, name),
            )
            for name, title, help_text in ACTIONS
        ]
        themes = self._themes
        for name in themes.names:
            current = " (current)" if name == themes.current else ""
            commands.append(
                PaletteCommand(
                    f"Theme: {name}",
                    f"use the {name} colours{current}; saved for next time",
                    partial(themes.choose, name),
                    discover=name in themes.theme_files,
                )
            )
        model = self.model
        for name in self._models() or ((model,) if model else ()):
            current = " (current)" if name == model else ""
            commands.append(
                PaletteCommand(
                    f"Model: {name}",
                    f"use {name} for the next turns{current}",
                    partial(self.choose_model, view, name),
                )
            )
        for command in system:
            if command.title not in HIDDEN_SYSTEM_COMMANDS:
                commands.append(PaletteCommand(command.title, command.help, command.callback))
        quit_all = partial(self._run_action, "quit")
        commands.append(PaletteCommand("Quit", "stop every running turn, then quit", quit_all))
        return commands

    def choose_model(self, view: ShownSession | None, name: str) -> None:
        """Use model ``name`` for the session's next turns (the running one keeps its own)."""
        set_model = getattr(self._gateway, "session_set_model", None)
        if view is None or not callable(set_model):
            self._notify("this gateway cannot change the model", severity="error")
            return
        try:
            set_model(view.session_id, name)
        except GatewayError as exc:
            self._notify(exc.message, title="Model", severity="error")
            return
        self._status.model = name
        self._notify(f"model {name} for the next turns", title="Model")
