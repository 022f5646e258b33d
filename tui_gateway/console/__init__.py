"""The console: command lines run on bounded workers, each under a fresh InterruptScope."""

from __future__ import annotations

from agent.faces import lazy_names

__all__, __getattr__ = lazy_names(
    __name__,
    {
        "CommandContext": "tui_gateway.console.commands",
        "CommandError": "tui_gateway.console.commands",
        "CommandStopped": "tui_gateway.console.commands",
        "Console": "tui_gateway.console.runner",
        "ConsoleHost": "tui_gateway.console.commands",
        "ConsoleRun": "tui_gateway.console.runner",
    },
)
