"""Gateway events and saved transcripts as ACP ``session/update`` payloads.

Pure functions, no I/O but reading the file a ``write_file`` call replaces (for its diff):

- :func:`prompt_text`: an ACP prompt (text, embedded resources, resource links) as desk's text;
- :func:`tool_started`: ``tool.start`` -> ``tool_call`` (the command for ``shell``, a diff for
  ``write_file``, the path for the file tools);
- :func:`tool_finished`: ``tool.complete`` -> ``tool_call_update`` (completed or failed);
- :func:`replay`: a resumed session's transcript -> the updates that show it again;
- :func:`stop_reason`: a turn's outcome -> the prompt's ``stopReason``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from acp import schema as s
from acp.helpers import (
    text_block,
    tool_content,
    tool_diff_content,
    update_agent_message_text,
    update_tool_call,
    update_user_message_text,
)

from agent.outcome import TurnStatus
from contract.events import MessageComplete, ToolComplete, ToolStart
from contract.results import TranscriptEntry

MAX_SHOWN_CHARS = 20_000
"""Most characters of a tool's result shown in its ``tool_call_update`` (head and tail kept)."""

MAX_DIFF_BYTES = 1_000_000
"""A file larger than this is not read for a ``write_file`` diff (the new text alone is sent)."""

Update = (
    s.AgentMessageChunk
    | s.AgentThoughtChunk
    | s.UserMessageChunk
    | s.ToolCallStart
    | s.ToolCallProgress
)
"""The ``session/update`` payloads desk sends."""

_KINDS: dict[str, s.ToolKind] = {
    "shell": "execute",
    "read_file": "read",
    "list_dir": "search",
    "write_file": "edit",
    "delegate": "think",
}


def prompt_text(blocks: Sequence[Any]) -> str:
    """The prompt's text: text blocks as they are, an embedded text resource under a line
    naming its URI, a resource link as ``@URI``; images and audio are not taken (initialize
    does not offer them)."""
    parts: list[str] = []
    for block in blocks:
        if isinstance(block, s.TextContentBlock):
            parts.append(block.text)
        elif isinstance(block, s.EmbeddedResourceContentBlock):
            resource = block.resource
            if isinstance(resource, s.TextResourceContents):
                parts.append(f"{resource.uri}:\n```\n{resource.text}\n```")
        elif isinstance(block, s.ResourceContentBlock):
            parts.append(f"@{block.uri}")
    return "\n\n".join(p for p in parts if p)


def _arguments(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text) if text else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _shown(text: str) -> str:
    if len(text) <= MAX_SHOWN_CHARS:
        return text
    half = MAX_SHOWN_CHARS // 2
    return f"{text[:half]}\n… {len(text) - MAX_SHOWN_CHARS:,} characters left out …\n{text[-half:]}"


def _old_text(path: Path) -> str | None:
    try:
        if not path.is_file() or path.stat().st_size > MAX_DIFF_BYTES:
            return None
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def tool_started(event: ToolStart, cwd: Path) -> s.ToolCallStart:
    """The ``tool_call`` of a call that starts.

    Args:
        event: the gateway's ``tool.start``.
        cwd: the directory the session's tools run in (relative paths are under it).

    Returns:
        the update: ``shell`` titled by its command (kind ``execute``); ``write_file`` with a
        diff from the file on disk (kind ``edit``); ``read_file``/``list_dir`` with the path as
        a location; other tools (MCP, ``delegate``) with their raw arguments.
    """
    args = _arguments(event.arguments)
    title = event.name
    content: list[Any] = []
    locations: list[s.ToolCallLocation] = []
    raw_path = args.get("path")
    path = (cwd / raw_path) if isinstance(raw_path, str) and raw_path else None
    if event.name == "shell" and isinstance(args.get("command"), str):
        title = args["command"]
        content.append(tool_content(text_block(f"$ {args['command']}")))
    elif path is not None:
        title = f"{event.name} {raw_path}"
        locations.append(s.ToolCallLocation(path=str(path)))
        if event.name == "write_file" and isinstance(args.get("content"), str):
            content.append(tool_diff_content(str(path), args["content"], _old_text(path)))
    elif event.name == "delegate" and isinstance(args.get("task"), str):
        title = f"delegate: {args['task']}"
    return s.ToolCallStart(
        session_update="tool_call",
        tool_call_id=event.call_id,
        title=title,
        kind=_KINDS.get(event.name, "other"),
        status="in_progress",
        content=content or None,
        locations=locations or None,
        raw_input=args or event.arguments,
    )


def tool_finished(event: ToolComplete) -> s.ToolCallProgress:
    """The ``tool_call_update`` of a call's one result: ``completed``, or ``failed`` when it
    failed, was declined or was stopped (the result's text says which)."""
    text = event.content
    if event.stopped_by:
        text = f"{text}\n({event.stopped_by})" if text else f"({event.stopped_by})"
    return update_tool_call(
        event.call_id,
        status="failed" if event.is_error else "completed",
        content=[tool_content(text_block(_shown(text)))] if text else None,
        raw_output={"content": _shown(event.content), "exit_code": event.exit_code},
    )


def replay(transcript: Sequence[TranscriptEntry], cwd: Path) -> list[Update]:
    """The updates that show a resumed session's transcript again, oldest first: prompts as
    ``user_message_chunk``, replies as ``agent_message_chunk``, each call as a ``tool_call``
    then its result as a ``tool_call_update``. Summaries and unsent prompts are left out."""
    out: list[Update] = []
    for entry in transcript:
        if entry.summary or entry.unsent:
            continue
        if entry.role == "user" and entry.content:
            out.append(update_user_message_text(entry.content))
        elif entry.role == "assistant":
            if entry.content:
                out.append(update_agent_message_text(entry.content))
            for call in entry.tool_calls:
                start = ToolStart(
                    turn_id="", call_id=call.call_id, name=call.name, arguments=call.arguments
                )
                out.append(tool_started(start, cwd).model_copy(update={"status": "pending"}))
        elif entry.role == "tool" and entry.tool_call_id:
            out.append(
                update_tool_call(
                    entry.tool_call_id,
                    status="completed",
                    content=[tool_content(text_block(_shown(entry.content)))],
                )
            )
    return out


def stop_reason(complete: MessageComplete) -> s.StopReason:
    """The ``stopReason`` of a prompt whose turn ended with ``complete``: ``end_turn``,
    ``cancelled`` for any stop, ``max_turn_requests`` at the iteration limit; a failed turn
    has none (the prompt is answered with an error)."""
    if complete.status == TurnStatus.INTERRUPTED:
        return "cancelled"
    if complete.status == TurnStatus.MAX_ITERATIONS:
        return "max_turn_requests"
    return "end_turn"
