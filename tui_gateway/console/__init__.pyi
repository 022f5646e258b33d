"""Type checkers read this; at run time the face imports each name on first use."""

from __future__ import annotations

from tui_gateway.console.commands import (
    CommandContext,
    CommandError,
    CommandStopped,
    ConsoleHost,
)
from tui_gateway.console.runner import (
    Console,
    ConsoleRun,
)

__all__ = [
    "CommandContext",
    "CommandError",
    "CommandStopped",
    "Console",
    "ConsoleHost",
    "ConsoleRun",
]
