"""What a server lists and answers, made into desk's terms: tools with the model's names, and text.

Imports the MCP SDK's types, so it is imported on the MCP loop only (see
:mod:`agent.mcp.transport`).

A ``tools/call`` result is a list of content blocks; the model gets one text. Text blocks are
kept as they are; an embedded text resource gives its text; what the model cannot read as text
(an image, audio, a binary resource, a link) is named in one line (``[image image/png, 12,345
bytes]``). A result with no blocks but ``structuredContent`` gives that as JSON. The text is cut
to the call's byte budget by the caller, like a shell command's output.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import mcp_types

from agent.mcp.names import exposed_names
from agent.mcp.status import RemoteTool


@dataclass(frozen=True, slots=True)
class CallAnswer:
    """A server's answer to one call, as text.

    Attributes:
        text: what the model reads (not cut yet).
        is_error: the server said the call failed (``isError``).
    """

    text: str
    is_error: bool = False


def object_schema(schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """The tool's input schema as the object schema OpenAI function parameters must be."""
    out = dict(schema or {})
    if out.get("type") != "object":
        return {"type": "object", "properties": {}}
    if not isinstance(out.get("properties"), dict):
        out["properties"] = {}
    return out


def remote_tools(server: str, listed: Sequence[mcp_types.Tool]) -> tuple[RemoteTool, ...]:
    """The server's tools with the model's names for them, in the listing's order.

    Args:
        server: the server's name from the settings.
        listed: what ``tools/list`` gave (every page).
    """
    names = exposed_names(server, [tool.name for tool in listed])
    out: list[RemoteTool] = []
    seen: set[str] = set()
    for tool in listed:
        if tool.name in seen:
            continue
        seen.add(tool.name)
        annotations = tool.annotations
        description = tool.description or tool.title or (annotations and annotations.title)
        out.append(
            RemoteTool(
                name=tool.name,
                exposed=names[tool.name],
                description=description or f"The {tool.name} tool of the MCP server {server}.",
                input_schema=object_schema(tool.input_schema),
                read_only=bool(annotations is not None and annotations.read_only_hint),
            )
        )
    return tuple(out)


def _decoded_size(data: str) -> int:
    try:
        return len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        return len(data)


def _block_text(block: Any) -> str:
    kind = getattr(block, "type", "")
    if kind == "text":
        return str(block.text)
    if kind in ("image", "audio"):
        return f"[{kind} {block.mime_type}, {_decoded_size(block.data):,} bytes]"
    if kind == "resource":
        resource = block.resource
        if isinstance(resource, mcp_types.TextResourceContents):
            return resource.text
        mime = getattr(resource, "mime_type", None) or "binary"
        size = _decoded_size(getattr(resource, "blob", ""))
        return f"[resource {resource.uri}: {mime}, {size:,} bytes]"
    if kind == "resource_link":
        return f"[resource link {block.uri}: {block.name}]"
    return f"[{kind or type(block).__name__} content]"


def call_answer(result: mcp_types.CallToolResult) -> CallAnswer:
    """The text of one ``tools/call`` result (see the module docstring)."""
    parts = [_block_text(block) for block in result.content]
    if not parts and result.structured_content is not None:
        parts = [json.dumps(result.structured_content, ensure_ascii=False, indent=2)]
    text = "\n".join(parts)
    if not text:
        text = "(no output)"
    return CallAnswer(text=text, is_error=bool(result.is_error))


__all__ = ["CallAnswer", "call_answer", "object_schema", "remote_tools"]
