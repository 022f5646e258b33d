"""Which messages a compression keeps, and which it summarises.

The head is the system prompt and the first exchange (the first user message and everything up
to the next user message); the tail is chosen from the end by a token budget, with at least
``min_tail_messages`` messages and the last user message; the middle is the rest. Boundaries move
so that an assistant message with tool calls always stays with the tool results answering it,
and so that the tail never starts with a user message (the summary, a user message, takes the
middle's place: user and assistant turns keep alternating).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agent.provider.types import ChatMessage
from agent.tokens import estimate_tokens

SUMMARY_MARKER = "[desk: summary of the earlier conversation]"
"""First line of a summary message; marks it as a reference, not something the person typed."""


def is_summary(message: ChatMessage) -> bool:
    """True for a summary message a previous compression wrote."""
    return message.role == "user" and message.content.startswith(SUMMARY_MARKER)


@dataclass(frozen=True, slots=True)
class CompressionPlan:
    """Index ranges of a transcript: ``[0, head_end)`` kept, ``[head_end, tail_start)``
    summarised, ``[tail_start, n)`` kept.

    Attributes:
        head_end: end of the head (exclusive).
        tail_start: start of the tail.
        tokens_in: estimated tokens of the middle.
        previous_summary: index of an earlier summary inside the middle, updated rather than
            summarised again, or None.
    """

    head_end: int
    tail_start: int
    tokens_in: int
    previous_summary: int | None = None

    @property
    def empty(self) -> bool:
        """True when there is nothing to summarise."""
        return self.tail_start - self.head_end < 2


def _keeps_tool_pairs(messages: Sequence[ChatMessage], index: int) -> int:
    """Move a boundary at ``index`` back so that tool results stay with their call."""
    while 0 < index < len(messages) and messages[index].role == "tool":
        index -= 1
    return index


def plan_compression(
    messages: Sequence[ChatMessage],
    *,
    window_tokens: int,
    tail_fraction: float = 0.25,
    min_tail_messages: int = 6,
    input_fraction: float = 0.6,
) -> CompressionPlan:
    """Choose head, middle and tail.

    Args:
        messages: the active transcript, oldest first.
        window_tokens: the model's context window, in tokens.
        tail_fraction: share of the window the tail may fill, by estimated tokens.
        min_tail_messages: the tail has at least this many messages (fewer if the transcript
            is short).
        input_fraction: share of the window the middle may fill, so that the summary request
            itself fits; a longer middle is cut at its end (the rest stays, between the
            summary and the tail, for a later compression).

    Returns:
        the plan; ``plan.empty`` when there is nothing worth summarising.
    """
    n = len(messages)
    head_end = 0
    if head_end < n and messages[0].role == "system":
        head_end = 1
    first_user = next((i for i in range(head_end, n) if messages[i].role == "user"), None)
    if first_user is not None and not is_summary(messages[first_user]):
        following = next((i for i in range(first_user + 1, n) if messages[i].role == "user"), n)
        head_end = following
    elif first_user is not None:
        head_end = first_user  # an earlier summary starts the middle: it gets updated

    last_user = max((i for i in range(n) if messages[i].role == "user"), default=n)
    budget = int(window_tokens * tail_fraction)
    tail_start, used = n, 0
    while tail_start > head_end:
        cost = estimate_tokens(messages[tail_start - 1])
        if n - tail_start >= min_tail_messages and used + cost > budget:
            break
        tail_start -= 1
        used += cost
    tail_start = min(tail_start, last_user)
    tail_start = _keeps_tool_pairs(messages, max(tail_start, head_end))
    head_end = min(head_end, tail_start)
    limit, used, end = int(window_tokens * input_fraction), 0, head_end
    while end < tail_start and used + estimate_tokens(messages[end]) <= limit:
        used += estimate_tokens(messages[end])
        end += 1
    tail_start = max(head_end, _keeps_tool_pairs(messages, end))
    # The summary is a user message: what follows it must not be one too, or chat templates
    # that require user and assistant turns to alternate (Mistral's, Gemma's) reject the
    # request. Keep the assistant turn before such a user message in the tail as well.
    while head_end < tail_start < n and messages[tail_start].role == "user":
        tail_start = max(head_end, _keeps_tool_pairs(messages, tail_start - 1))
    middle = messages[head_end:tail_start]
    previous = next((head_end + i for i, m in enumerate(middle) if is_summary(m)), None)
    return CompressionPlan(
        head_end=head_end,
        tail_start=tail_start,
        tokens_in=sum(estimate_tokens(m) for m in middle),
        previous_summary=previous,
    )
