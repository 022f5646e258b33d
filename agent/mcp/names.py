"""The names the model sees for MCP tools: ``mcp__<server>__<tool>``, made fit for OpenAI.

OpenAI-compatible servers take function names of 1 to 64 characters among ``a-z A-Z 0-9 _ -``
(``^[a-zA-Z0-9_-]{1,64}$``). MCP tool names may hold other characters (``.``, ``/``, spaces,
letters beyond ASCII) and be longer, so every other character becomes ``_``, and a name that
is too long, or that two tools of one server would share once cleaned, is cut and given the
first 8 hex digits of the SHA-256 of the server's own name for it. The same listing always gives
the same names.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

MAX_NAME = 64
"""Longest function name OpenAI-compatible servers take."""

PREFIX = "mcp__"
"""Every MCP tool's name starts with this."""

_BAD = re.compile(r"[^A-Za-z0-9_-]")


def _clean(text: str) -> str:
    return _BAD.sub("_", text) or "_"


def _hashed(base: str, original: str) -> str:
    digest = hashlib.sha256(original.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{base[: MAX_NAME - 9]}_{digest}"


def exposed_names(server: str, tools: Iterable[str]) -> dict[str, str]:
    """The model's name for each of a server's tools.

    Args:
        server: the server's name from the settings (letters, digits, ``_``, ``-``).
        tools: the tool names the server listed, in its order.

    Returns:
        server tool name -> ``mcp__<server>__<tool>`` (cleaned, at most 64 characters, unique
        within the server), in the listing's order.
    """
    out: dict[str, str] = {}
    taken: set[str] = set()
    for tool in tools:
        if tool in out:
            continue
        name = f"{PREFIX}{_clean(server)}__{_clean(tool)}"
        if len(name) > MAX_NAME or name in taken:
            name = _hashed(name, tool)
        taken.add(name)
        out[tool] = name
    return out


__all__ = ["MAX_NAME", "PREFIX", "exposed_names"]
