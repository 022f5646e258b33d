"""The structured summary the model writes, and the request that asks for it.

The template's sections (goal, constraints, progress, key decisions, relevant files, next steps)
follow the handoff-summary practice of coding agents: enough for the model to carry on without
the archived messages.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent.compression.plan import SUMMARY_MARKER, is_summary
from agent.provider.types import ChatMessage

TEMPLATE = """Write a summary of the conversation below that lets the assistant carry on without it.
Use exactly these Markdown sections, each short and concrete:

## Goal
## Constraints
## Progress
### Done
### In progress
### Blocked
## Key decisions
## Relevant files
## Next steps
{focus}
Reply with the summary only."""


def _render(message: ChatMessage) -> str:
    if message.role == "tool":
        return f"[tool result {message.tool_call_id}]\n{message.content}"
    text = message.content
    for call in message.tool_calls:
        text += f"\n[tool call {call.name} {call.arguments}]"
    return f"[{message.role}]\n{text}"


def summary_request(
    middle: Sequence[ChatMessage], *, focus: str | None = None
) -> list[ChatMessage]:
    """The messages of the summary call.

    Args:
        middle: the messages to summarise (an earlier summary among them is updated).
        focus: what the person asked the summary to keep in view (``/compress FOCUS``).

    Returns:
        a system message with the template and one user message with the conversation.
    """
    focus_line = f"\nKeep this in focus: {focus}\n" if focus else ""
    previous = [m for m in middle if is_summary(m)]
    rest = [m for m in middle if not is_summary(m)]
    parts = []
    if previous:
        parts.append("An earlier summary, to update with what follows:\n\n" + previous[-1].content)
    parts.append("\n\n".join(_render(m) for m in rest))
    return [
        ChatMessage("system", TEMPLATE.format(focus=focus_line)),
        ChatMessage("user", "\n\n---\n\n".join(parts)),
    ]


def summary_message(text: str) -> ChatMessage:
    """The summary as it enters the transcript: a marked reference message."""
    return ChatMessage("user", f"{SUMMARY_MARKER}\n\n{text.strip()}")
