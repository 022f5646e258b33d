"""Which screens close on Esc: there Esc is the screen's key, not a stop."""

from __future__ import annotations

from textual.app import App


def closes_on_escape(app: App[int]) -> bool:
    """True while the screen on top closes on Esc: the command palette or the delete
    confirmation (the help screen is not one: Esc stops there too, and closes it).

    Safe on any thread: one read of the screen stack, which may be a moment old.
    """
    from textual.command import CommandPalette

    from desk.screens.confirm_delete import ConfirmDelete

    try:
        top = app.screen_stack[-1]
    except (IndexError, KeyError):  # no screen yet, or a mode being switched
        return False
    return isinstance(top, CommandPalette | ConfirmDelete)
