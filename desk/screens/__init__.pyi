"""Type checkers read this; at run time the face imports each name on first use."""

from __future__ import annotations

from desk.screens.help_screen import HelpScreen

__all__ = ["HelpScreen"]
