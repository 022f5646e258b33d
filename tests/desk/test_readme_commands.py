"""The README lists every command the help screen (F1) lists, and says what ``desk run`` prints
when it refuses a tool call."""

from __future__ import annotations

from pathlib import Path

from desk.slash import SLASH_COMMANDS
from tui_gateway.console.commands import command_infos

README = Path(__file__).resolve().parents[2] / "README.md"


def test_every_command_on_the_help_screen_is_in_the_readme() -> None:
    text = README.read_text()
    usages = [command.usage for command in SLASH_COMMANDS]
    usages += [info.usage for info in command_infos()]
    missing = [usage for usage in usages if f"`{usage.split(' ')[0]}" not in text]
    assert missing == []
