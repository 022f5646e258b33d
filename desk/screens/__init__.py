"""desk's screens, one per module, each with its CSS in a ``.tcss`` file beside it.

A light face: the names below are imported on first use; type checkers read ``__init__.pyi``.
"""

from __future__ import annotations

from agent.faces import lazy_names

__all__, __getattr__ = lazy_names(__name__, {"HelpScreen": "desk.screens.help_screen"})
