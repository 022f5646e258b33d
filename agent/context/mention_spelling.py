"""How an ``@`` mention spells a path, for the gateway that reads mentions and for the desk
that completes them (only :mod:`re`: the desk imports it before its first frame)."""

from __future__ import annotations

import re

MENTION = re.compile(r'(?<![\w/@])@(?:"([^"\n]+)"|((?:[\w.~/+\-]|\\ )+))')
"""``@path``: a path of letters, digits and ``. ~ / + - _`` (``\\ `` for a space), or
``@"path"``: any path without a quote or a line break. Group 1 is a quoted path, group 2 a
bare one (as typed)."""

BARE = re.compile(r"(?:[\w.~/+\-]| )+")
"""A path a bare mention spells (a space is typed ``\\ ``); any other is quoted."""


def spelled(path: str) -> str:
    """How a mention spells ``path`` after its ``@``: as is (a space typed ``\\ ``) when it
    holds only the characters a bare mention holds, else quoted (``"notes (1).txt"``); a path
    holding a quote or a line break cannot be mentioned (see
    :func:`agent.context.mentions.mentionable`)."""
    if BARE.fullmatch(path) is not None:
        return path.replace(" ", "\\ ")
    return f'"{path}"'
