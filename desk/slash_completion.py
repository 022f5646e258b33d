"""Tab completion of a ``/command`` in the prompt box, and what its hint list shows.

Tab on ``/word`` completes the command name when one matches, completes to the candidates'
common prefix and lists them when several do (Tab again goes through them), or says that none
does. An edit of the text starts over. :class:`SlashCompletion` keeps that state and answers
what the box shows; the box (:class:`desk.widgets.prompt_input.PromptInput`) sets its text and
draws the hint list.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from desk.slash import SlashCommand, command_named, common_prefix, completions


def completing_slash(text: str) -> bool:
    """True when Tab completes ``text``: one line ``/word`` (not ``//``) with no space yet."""
    return (
        text.startswith("/") and not text.startswith("//") and " " not in text and "\n" not in text
    )


@dataclass(frozen=True, slots=True)
class Hints:
    """What the hint list above the box shows.

    Attributes:
        message: one line instead of commands (e.g. ``no command starts with /zz``), or None.
        commands: the commands listed (none: the list is hidden, unless a message is shown).
        selected: the index of the one Tab shows now, or None.
    """

    message: str | None = None
    commands: Sequence[SlashCommand] = ()
    selected: int | None = None


class SlashCompletion:
    """One prompt box's Tab completion: the candidates Tab goes through and what it said."""

    def __init__(self) -> None:
        self._cycle: list[SlashCommand] = []  # candidates Tab goes through
        self._index = -1  # the one shown now (-1: none yet, the common prefix is shown)
        self._text: str | None = None  # the text the last Tab left (Tab again cycles)
        self._message: str | None = None  # "no command starts with ..." until the next edit

    def tab(self, text: str, commands: Sequence[SlashCommand]) -> str | None:
        """Tab on ``text``: the text it completes to (None when it stays as it is).

        Args:
            text: the box's text (completed only while :func:`completing_slash`).
            commands: the console's commands, completed after the desk's own.
        """
        if not completing_slash(text):
            return None
        if self._cycle and text == self._text:
            self._index = (self._index + 1) % len(self._cycle)
            return self._left("/" + self._cycle[self._index].name)
        self.reset()
        matches = completions(text, commands)
        if not matches:
            self._message = f"no command starts with {text}"
            self._text = text
            return None
        if len(matches) == 1:
            return self._left(f"/{matches[0].name} ")
        self._cycle = matches
        return self._left("/" + common_prefix(command.name for command in matches))

    def _left(self, text: str) -> str:
        self._text = text
        return text

    def edited(self, text: str) -> None:
        """The box's text is now ``text``: any other text than the last Tab left starts over."""
        if text != self._text:
            self.reset()

    def reset(self) -> None:
        """Start over: no candidates, no message."""
        self._cycle = []
        self._index = -1
        self._text = None
        self._message = None

    def hints(self, text: str, commands: Sequence[SlashCommand]) -> Hints:
        """What fits ``text`` now: the Tab message, the candidates, or the typed command's
        usage (kept while its arguments are typed); nothing otherwise."""
        if self._message is not None:
            return Hints(message=self._message)
        if self._cycle:
            return Hints(commands=self._cycle, selected=self._index if self._index >= 0 else None)
        if completing_slash(text) and (matches := completions(text, commands)):
            return Hints(commands=matches)
        if text.startswith("/") and not text.startswith("//") and "\n" not in text:
            command = command_named(text[1:].partition(" ")[0], commands)
            if command is not None:
                return Hints(commands=[command])
        return Hints()
