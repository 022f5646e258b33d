"""A class's Google-style docstring as a summary and per-attribute descriptions.

The documents generated from the contract (:mod:`tui_gateway.wire.contract_docs`) describe each
type and member with the words of its docstring, so the documents and the code say one thing.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

SECTIONS = frozenset({"Attributes", "Args", "Returns", "Raises", "Yields", "Example", "Examples"})
"""Section headings that end a docstring's summary."""


def doc_parts(cls: type[Any]) -> tuple[str, dict[str, str]]:
    """The summary and the ``Attributes:`` descriptions of a class's docstring.

    Args:
        cls: a class; a dataclass without a docstring of its own has none (dataclasses make
            one from the signature, which is left out).

    Returns:
        (the summary, its paragraphs joined by a blank line and each paragraph's lines by one
        space; attribute name -> its description on one line). Text is returned as written
        (reST ``literals`` kept).
    """
    doc = inspect.getdoc(cls) or ""
    if cls.__doc__ is None or (
        dataclasses.is_dataclass(cls) and doc.startswith(cls.__name__ + "(")
    ):
        return "", {}
    lines = doc.splitlines()
    paragraphs: list[list[str]] = [[]]
    for line in lines:
        stripped = line.strip()
        if stripped.endswith(":") and stripped[:-1] in SECTIONS:
            break
        if stripped:
            paragraphs[-1].append(stripped)
        elif paragraphs[-1]:
            paragraphs.append([])
    summary = "\n\n".join(" ".join(p) for p in paragraphs if p)
    attrs: dict[str, str] = {}
    current: str | None = None
    inside = False
    for line in lines:
        stripped = line.strip()
        if stripped == "Attributes:":
            inside = True
            continue
        if not inside:
            continue
        if stripped.endswith(":") and stripped[:-1] in SECTIONS:
            break
        if not stripped:
            current = None
            continue
        indent = len(line) - len(line.lstrip())
        name, sep, text = stripped.partition(":")
        if indent <= 4 and sep and name.isidentifier():
            current = name
            attrs[name] = text.strip()
        elif current is not None:
            attrs[current] += " " + stripped
    return summary, attrs


def plain(text: str) -> str:
    """Docstring text as Markdown: reST ``literals`` become `code`."""
    return text.replace("``", "`")
