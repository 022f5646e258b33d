"""Tool definitions sized for the window: whole, or compact on a small one.

A request carries the definitions of every tool it offers, and a chat template renders them
into the prompt: desk's own five take about 1,100 tokens, half of a 2,048-token window. On a
small window they are sent compact: each description cut to its first sentence (without its
asides in parentheses), and of the
parameters only their names, types, ``enum`` and ``required`` (descriptions, bounds and
``additionalProperties`` left out: desk still checks every call against the whole schema, and
the model is told what was wrong). ``tool_schemas`` chooses:

- ``auto`` (the default): compact when the whole definitions would take more than a tenth
  of the window (`COMPACT_SHARE`), counted at the default 3 characters a token so that the
  choice stays the same for the session (desk's own tools: compact below about 10,000 tokens);
- ``full``: always whole; ``compact``: always compact.

Leaving the tools out altogether is the gateway's ``tools`` setting, not this one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from enum import StrEnum
from typing import Any

from agent.tokens import TOOL_SETS_KEPT

COMPACT_SHARE = 0.1
"""Share of the window the whole definitions may take before ``auto`` sends them compact."""

_KEPT = frozenset({"type", "properties", "required", "items", "enum"})
_ASIDE = re.compile(r"\s*\([^()]*\)")
_SPACES = re.compile(r"\s{2,}")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")


class ToolSchemas(StrEnum):
    """How tool definitions are sent (see the module docstring)."""

    AUTO = "auto"
    FULL = "full"
    COMPACT = "compact"


def first_sentence(text: str) -> str:
    """The first sentence of ``text`` (all of it when it has one sentence), its asides in
    parentheses left out."""
    sentence = _SENTENCE_END.split(text.strip(), maxsplit=1)[0]
    return _SPACES.sub(" ", _ASIDE.sub("", sentence)).replace(" .", ".").strip()


def _compact_parameters(schema: Any) -> Any:
    if not isinstance(schema, dict):
        return schema
    out = {k: v for k, v in schema.items() if k in _KEPT}
    properties = out.get("properties")
    if isinstance(properties, dict):
        out["properties"] = {name: _compact_parameters(p) for name, p in properties.items()}
    if isinstance(out.get("items"), dict):
        out["items"] = _compact_parameters(out["items"])
    return out


def compact_schema(tool: dict[str, Any]) -> dict[str, Any]:
    """One ``tools[]`` element made compact (a new dict; ``tool`` is not changed).

    Args:
        tool: ``{"type": "function", "function": {"name", "description", "parameters"}}``;
            anything else is returned as it is.
    """
    function = tool.get("function")
    if not isinstance(function, dict):
        return tool
    compact: dict[str, Any] = {"name": function.get("name")}
    description = function.get("description")
    if isinstance(description, str) and description:
        compact["description"] = first_sentence(description)
    if "parameters" in function:
        compact["parameters"] = _compact_parameters(function["parameters"])
    return {**tool, "function": compact}


_CACHE: dict[tuple[int, ...], tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {}


def compact_tools(tools: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every definition of ``tools`` made compact (the same list object for the same tools,
    so its measured size is reused)."""
    key = tuple(id(tool) for tool in tools)
    found = _CACHE.get(key)
    if found is None or found[0] != list(tools):
        found = (list(tools), [compact_schema(tool) for tool in tools])
        if len(_CACHE) >= TOOL_SETS_KEPT:
            _CACHE.clear()
        _CACHE[key] = found
    return found[1]
