"""desk's screens, one per module, each with its CSS in a ``.tcss`` file beside it."""

from __future__ import annotations

from desk.screens.help_screen import HelpScreen

__all__ = ["HelpScreen"]
