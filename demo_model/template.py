"""The strict chat template: the checks Mistral's, Gemma's and Llama-2's Jinja templates make.

Those templates end in ``raise_exception('Conversation roles must alternate
user/assistant/user/assistant/...')`` when, after an optional system message, user and
assistant turns do not alternate; llama.cpp answers such a request with HTTP 400 quoting the
message. Mistral's tool-using template skips tool results and assistant messages that carry
tool calls in that check, so an assistant turn may be a run of (tool calls, their results)
pairs, ending in a text reply or at the end of the request. A tool call without its result, or
a result without its call, breaks the same rule here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

ALTERNATION_ERROR = "Conversation roles must alternate user/assistant/user/assistant/..."
"""The text the templates raise, quoted verbatim."""


def alternation_error(messages: Sequence[Mapping[str, Any]]) -> str | None:
    """Check a request's messages as a strict template would.

    Rules: a ``system`` message only first; then ``user`` and assistant turns alternate, the
    first being ``user``; an assistant turn is any number of assistant messages with
    ``tool_calls``, each followed by exactly one ``tool`` result per call id, then optionally
    one assistant message without tool calls; after tool results only an assistant message or
    the end of the request may follow.

    Args:
        messages: the request's ``messages``.

    Returns:
        `ALTERNATION_ERROR` when a rule is broken, else ``None``.
    """
    index = 1 if messages and messages[0].get("role") == "system" else 0
    expect_user = True
    n = len(messages)
    while index < n:
        role = messages[index].get("role")
        if expect_user:
            if role != "user":
                return ALTERNATION_ERROR
            index += 1
            expect_user = False
            continue
        index = _assistant_turn(messages, index)
        if index < 0:
            return ALTERNATION_ERROR
        expect_user = True
    return None


def _assistant_turn(messages: Sequence[Mapping[str, Any]], index: int) -> int:
    """Consume one assistant turn from ``index``; return where it ends, or -1 when broken."""
    n = len(messages)
    if messages[index].get("role") != "assistant":
        return -1
    while index < n and messages[index].get("role") == "assistant":
        calls = _call_ids(messages[index])
        index += 1
        if not calls:
            return index  # a text reply closes the turn
        answered: set[str] = set()
        while index < n and messages[index].get("role") == "tool":
            call_id = str(messages[index].get("tool_call_id") or "")
            if call_id not in calls or call_id in answered:
                return -1
            answered.add(call_id)
            index += 1
        if answered != calls:
            return -1
        if index < n and messages[index].get("role") != "assistant":
            return -1  # after tool results the assistant speaks again
    return index


def _call_ids(message: Mapping[str, Any]) -> set[str]:
    calls = message.get("tool_calls")
    if not isinstance(calls, list):
        return set()
    return {str(call.get("id") or "") for call in calls if isinstance(call, Mapping)}
