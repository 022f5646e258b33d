"""The structured summary the model writes, and the request that asks for it.

The template's sections (goal, constraints, progress, key decisions, relevant files, next steps)
follow the handoff-summary practice of coding agents: enough for the model to carry on without
the archived messages.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from agent.compression.plan import SUMMARY_MARKER, is_summary
from agent.context.shrink import cut_middle, note_chars
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


SINGLE_TEMPLATE = """Summarise the message below so that the conversation can go on without it:
keep what was asked or stated, names, figures, file paths, errors and decisions; say what kind of
text it is (a log, code, a document...). Reply with the summary only."""

EARLIER = "An earlier summary, to update with what follows:\n\n"
"""Heads an earlier summary in the summary call's conversation."""

SINGLE_MARKER = "[desk: a long message, summarised on its own]"
"""Heads a single's summary where it stands in for the message in the summary call."""


def _render(message: ChatMessage, cut_chars: int | None, share_chars: int | None) -> str:
    text = message.content
    if message.role == "tool" and cut_chars:
        text = cut_middle(text, cut_chars)
    for call in message.tool_calls:  # a call's arguments (a file's text) count in its share
        text += f"\n[tool call {call.name} {call.arguments}]"
    if share_chars:
        text = cut_middle(text, share_chars)
    if message.role == "tool":
        return f"[tool result {message.tool_call_id}]\n{text}"
    return f"[{message.role}]\n{text}"


def cut_to_fit(parts: Sequence[str], max_chars: int) -> list[str]:
    """``parts`` cut so that together they have about ``max_chars`` characters at most.

    Water-filling: every part longer than a common cap is cut to a head and a tail with a
    note of what was left out (`agent.context.shrink.cut_middle`), the cap as large as the
    total allows; shorter parts stay whole. A part the note would not shorten stays whole,
    so the total may run over by a note's length a part.

    Args:
        parts: the texts, in order.
        max_chars: the characters they may have together (at least 1).

    Returns:
        the texts, in the same order.
    """
    if sum(len(p) for p in parts) <= max_chars:
        return list(parts)
    left, cap = max(1, max_chars), 0
    lengths = sorted(len(p) for p in parts)
    for index, length in enumerate(lengths):
        if length * (len(lengths) - index) > left:
            cap = left // (len(lengths) - index)
            break
        left -= length
    return [p if len(p) <= cap else cut_middle(p, max(2, cap - note_chars(cap))) for p in parts]


def summary_request(
    middle: Sequence[ChatMessage],
    *,
    focus: str | None = None,
    cut_chars: int | None = None,
    share_chars: int | None = None,
    replaced: Mapping[int, str] | None = None,
    max_chars: int | None = None,
) -> list[ChatMessage]:
    """The messages of the summary call.

    Args:
        middle: the messages to summarise (an earlier summary among them is updated); unsent
            prompts are left out.
        focus: what the person asked the summary to keep in view (``/compress FOCUS``).
        cut_chars: tool outputs longer than this are read cut to a head and a tail.
        share_chars: every message longer than this is read cut to a head and a tail (a
            middle too long for one call).
        replaced: position in ``middle`` -> the summary that stands in for that message (a
            single summarised on its own).
        max_chars: the most characters the conversation may have (None: read as planned):
            every part longer than its share (an earlier summary included) is cut to it
            (`cut_to_fit`), so that a request the window cannot hold is read shorter.

    Returns:
        a system message with the template and one user message with the conversation.
    """
    focus_line = f"\nKeep this in focus: {focus}\n" if focus else ""
    stand_ins = replaced or {}
    previous = [m for m in middle if is_summary(m)]
    rendered = []
    for index, message in enumerate(middle):
        if message.unsent or is_summary(message):
            continue
        if index in stand_ins:
            rendered.append(f"[{message.role}]\n{SINGLE_MARKER}\n{stand_ins[index].strip()}")
        else:
            rendered.append(_render(message, cut_chars, share_chars))
    earlier = previous[-1].content if previous else None
    if max_chars is not None:  # the separators and the earlier summary's heading come off
        pieces = [earlier, *rendered] if earlier is not None else rendered
        fixed = 4 * len(pieces) + (len(EARLIER) + 7 if earlier is not None else 0)
        pieces = cut_to_fit(pieces, max(1, max_chars - fixed))
        earlier, rendered = (pieces[0], pieces[1:]) if earlier is not None else (None, pieces)
    parts = []
    if earlier is not None:
        parts.append(EARLIER + earlier)
    parts.append("\n\n".join(rendered))
    return [
        ChatMessage("system", TEMPLATE.format(focus=focus_line)),
        ChatMessage("user", "\n\n---\n\n".join(parts)),
    ]


def single_request(message: ChatMessage, keep_chars: int) -> list[ChatMessage]:
    """The messages of a single's own summary call: the message (its tool calls with their
    arguments included) cut to ``keep_chars``, its middle left out with a note."""
    text = message.content
    for call in message.tool_calls:
        text += f"\n[tool call {call.name} {call.arguments}]"
    return [
        ChatMessage("system", SINGLE_TEMPLATE),
        ChatMessage("user", cut_middle(text, keep_chars)),
    ]


def summary_message(text: str) -> ChatMessage:
    """The summary as it enters the transcript: a marked reference message."""
    return ChatMessage("user", f"{SUMMARY_MARKER}\n\n{text.strip()}")
