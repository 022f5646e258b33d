"""The pieces of an ``/export`` document that blocks write themselves: quotes, fences, tool calls.

Pure functions (no widgets), used by :mod:`desk.export` and by the transcript blocks that
export themselves (tool cards, a resumed session's tool calls, child agents). The document as a
whole is made terminal-safe once, by :func:`desk.export.session_markdown`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

EXPORT_OUTPUT_CHARS = 4_000
"""Most characters of one tool call's output in an export (its head and tail are kept)."""

_BACKTICKS = re.compile(r"`{3,}")
_SGR = re.compile(r"(?:\x1b\[|\x9b)[0-9;:]*m")


def without_colours(text: str) -> str:
    """``text`` without its SGR colour sequences (a file has no use for them; every other
    control character is made visible with the whole document)."""
    return _SGR.sub("", text)


def quote(text: str) -> str:
    """``text`` as a Markdown block quote (blank lines kept inside it)."""
    return "\n".join(f"> {line}" if line else ">" for line in text.splitlines())


def fenced(text: str, info: str = "") -> str:
    """``text`` in a code fence longer than any run of backticks inside it (CommonMark), so
    nothing in the text can close it early.

    Args:
        text: the content (a trailing newline is dropped).
        info: the info string (e.g. ``json``), or "".
    """
    longest = max((len(m.group(0)) for m in _BACKTICKS.finditer(text)), default=2)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text.rstrip(chr(10))}\n{fence}"


def capped(text: str, limit: int = EXPORT_OUTPUT_CHARS) -> str:
    """``text`` cut to about ``limit`` characters: its head and tail, with a line saying how
    much was left out between them."""
    if len(text) <= limit:
        return text
    half = limit // 2
    left_out = len(text) - 2 * half
    return f"{text[:half]}\n… {left_out:,} characters left out …\n{text[-half:]}"


def pretty_arguments(arguments: str) -> tuple[str, str]:
    """A call's JSON arguments indented for reading, and the fence's info string.

    Returns:
        ``(indented JSON, "json")``, or ``(the raw text, "")`` when it does not parse.
    """
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return arguments, ""
    return json.dumps(parsed, indent=2, ensure_ascii=False), "json"


@dataclass(frozen=True, slots=True)
class ExportedCall:
    """One tool call as an export shows it.

    Attributes:
        name: the tool.
        arguments: its raw JSON arguments.
        output: what it printed, or its result ("" when none yet).
        outcome: one line saying how it ended (``✓ exit 0 · 2.1 s``), or "" when unknown.
        note: the stop line under it (``■ stopped by you · ...``), or "".
    """

    name: str
    arguments: str
    output: str = ""
    outcome: str = ""
    note: str = ""


def tool_call_markdown(call: ExportedCall) -> str:
    """One tool call: a heading, its arguments, its (capped) output, how it ended.

    Returns:
        Markdown with no trailing blank line.
    """
    parts = [f"### Tool call: {call.name}"]
    arguments, info = pretty_arguments(call.arguments)
    if arguments.strip():
        parts.append(fenced(arguments, info))
    if call.outcome:
        parts.append(f"Result: {call.outcome}")
    if call.output.strip():
        parts.append(fenced(capped(without_colours(call.output))))
    if call.note:
        parts.append(quote(call.note))
    return "\n\n".join(parts)
