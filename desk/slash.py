"""Slash commands typed in the prompt box: the list shown on the help screen, and parsing.

A line that starts with ``/`` and names a command in :data:`SLASH_COMMANDS` is handled by the
desk and never sent to the model. The gateway console's commands (``/help``, ``/new``,
``/stop``...; ``gateway.console_commands()``) are typed in the same box, so completion
(:func:`completions`) offers them too, given as :func:`console_slash_commands`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from contract.results import ConsoleCommandInfo


@dataclass(frozen=True, slots=True)
class SlashCommand:
    """One command.

    Attributes:
        name: the word after ``/`` (e.g. ``theme``).
        args: how its argument is written on the help screen (e.g. ``[NAME]``), or "".
        help: what it does, short.
    """

    name: str
    args: str
    help: str

    @property
    def usage(self) -> str:
        """``/name ARGS`` as shown on the help screen."""
        return f"/{self.name} {self.args}".rstrip()


SLASH_COMMANDS: list[SlashCommand] = [
    SlashCommand("theme", "[NAME]", "switch the colour theme (no name: list the themes)"),
    SlashCommand("export", "[PATH]", "write this session as Markdown (default ./desk-…md)"),
    SlashCommand("compress", "[FOCUS]", "summarise the middle of this session now"),
    SlashCommand("undo", "", "put back the files the last turn changed (again: the one before)"),
    SlashCommand("diff", "", "show what this session's turns changed in the workspace"),
    SlashCommand("init", "", "the model writes a starting AGENTS.md (it asks before writing)"),
]
"""The commands the desk handles, in the order the help screen lists them."""


def console_slash_commands(commands: Iterable[ConsoleCommandInfo]) -> list[SlashCommand]:
    """The gateway console's commands as the prompt box completes them."""
    slash: list[SlashCommand] = []
    for command in commands:
        _word, _, args = command.usage.partition(" ")
        slash.append(SlashCommand(command.name, args.strip(), command.summary))
    return slash


def parse_slash(text: str) -> tuple[str, str] | None:
    """Split ``/name args`` into ``(name, args)``.

    Args:
        text: the prompt box's text.

    Returns:
        the lower-case command name and the rest of the line (stripped), or None when the text
        is not a slash command (it does not start with ``/``, or ``//`` escapes a literal ``/``).
    """
    line = text.strip()
    if not line.startswith("/") or line.startswith("//") or len(line) < 2:
        return None
    name, _, rest = line[1:].partition(" ")
    if not name or "\n" in name:
        return None
    return name.lower(), rest.strip()


def known_commands(console: Sequence[SlashCommand] = ()) -> list[SlashCommand]:
    """Every command the prompt box takes: :data:`SLASH_COMMANDS`, then the console's.

    A console command named like one of the desk's is left out (the desk's wins).
    """
    commands = list(SLASH_COMMANDS)
    names = {command.name for command in commands}
    commands += [command for command in console if command.name not in names]
    return commands


def completions(text: str, console: Sequence[SlashCommand] = ()) -> list[SlashCommand]:
    """Commands whose name starts with what is typed after ``/`` (for completion).

    Args:
        text: the prompt box's text; only one line ``/word`` with no space yet completes.
        console: the console's commands (:func:`console_slash_commands`).

    Returns:
        the matching commands of :func:`known_commands`, in its order (empty for ``//``).
    """
    line = text.lstrip()
    if not line.startswith("/") or line.startswith("//") or " " in line or "\n" in line:
        return []
    prefix = line[1:].lower()
    return [command for command in known_commands(console) if command.name.startswith(prefix)]


def command_named(name: str, console: Sequence[SlashCommand] = ()) -> SlashCommand | None:
    """The known command called ``name`` (any case), or None."""
    wanted = name.lower()
    return next((c for c in known_commands(console) if c.name == wanted), None)


def common_prefix(names: Iterable[str]) -> str:
    """The longest text every one of ``names`` starts with ("" for none)."""
    listed = list(names)
    if not listed:
        return ""
    first, last = min(listed), max(listed)
    length = 0
    while length < min(len(first), len(last)) and first[length] == last[length]:
        length += 1
    return first[:length]


_COMMAND_WORD = re.compile(r"^/[a-z][a-z-]*\b")


def unknown_command(text: str) -> str | None:
    """The ``/word`` of a prompt-box text that looks like a command no one handled, or None.

    Call it after every handler had its turn. Only a first word like ``/bogus`` counts (lower
    case letters and ``-``); a path stays text: a word with a second ``/`` (``/usr/bin``) or an
    existing absolute path (``/tmp``). ``//`` escapes a literal ``/``.

    Returns:
        the word (e.g. ``/bogus``), or None when the text is to be sent as a prompt.
    """
    line = text.strip()
    if not line:
        return None
    word = line.split(maxsplit=1)[0]
    match = _COMMAND_WORD.match(word)
    if match is None or match.group(0) != word:
        return None
    if "/" in word[1:]:
        return None
    try:
        if Path(word).exists():
            return None
    except OSError:
        return None
    return word
