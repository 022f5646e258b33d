"""The console: command lines run on bounded workers, each under a fresh InterruptScope."""

from tui_gateway.console.commands import CommandContext, CommandError, CommandStopped, ConsoleHost
from tui_gateway.console.runner import Console, ConsoleRun

__all__ = [
    "CommandContext",
    "CommandError",
    "CommandStopped",
    "Console",
    "ConsoleHost",
    "ConsoleRun",
]
