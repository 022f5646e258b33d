"""How an ``@`` mention spells a path, for the gateway that reads mentions and for the desk
that completes them (only :mod:`re`: the desk imports it before its first frame)."""

from __future__ import annotations

import re

MENTION = re.compile(r'(?<![\w/@])@(?:"([^"\n]+)"|((?:[^\s"\\]|\\ )+))')
"""``@path``: a path without white space, quotes or backslashes (``\\ `` for a space; a
sentence's punctuation after it is tried without, see :mod:`agent.context.mentions`), or
``@"path"``: any path without a quote or a line break. Group 1 is a quoted path, group 2 a
bare one (as typed)."""

BARE = re.compile(r'[^\s"\\]+')
"""A path a bare mention spells; any other (a space in it, say) is quoted."""


def spelled(path: str) -> str:
    """How a mention spells ``path`` after its ``@``: as is when it holds only the characters
    a bare mention holds, else quoted (``"notes 1.txt"``); a path holding a quote or a line
    break cannot be mentioned (see :func:`agent.context.mentions.mentionable`)."""
    return path if BARE.fullmatch(path) is not None else f'"{path}"'
