"""The request a transcript becomes: well formed for the strictest chat templates.

The transcript keeps everything as it happened; the request sent to the model is built from it
by one pass, so that Mistral's, Gemma's and Llama-2's templates (which raise "Conversation
roles must alternate user/assistant/user/assistant/...") and tool-calling APIs accept it:

- a prompt that was never sent (``ChatMessage.unsent``) is left out; so is one whose turn
  ended without a word from the model (stopped, failed or refused before any reply: see
  :func:`withdrawn`): the person took it back, or will send it again, and the next prompt
  must not carry it (``one⏎ Esc two⏎`` asks for ``two``, not for "one two");
- two user messages in a row that remain (a steer, a transcript saved before that rule) are
  joined into one, as Anthropic's Messages API joins consecutive user turns;
- an assistant text followed by another assistant message is joined into it;
- every tool call gets its result: a call left without one (a crash, a stop) gets a short
  result saying so, and a result whose call is not right before it is left out;
- after tool results the assistant speaks before the next user message: a one-line assistant
  note chosen by what follows (:func:`tool_results_note`): a steer delivered right after the
  results gets :data:`STEER_NOTE`, the next prompt after a turn that ended in tool results gets
  :data:`NO_REPLY`. This is the only place the note is chosen, so the request sent right after
  a steer and every later request render the same text there (a server's prompt cache keeps
  the prefix);
- only the first message may be a system message (a later one joins the user message after
  it), and the first message after it is a user message.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from agent.provider.types import ChatMessage

NO_RESULT = "(no result: the turn ended before this tool answered)"
"""The result given to a tool call that never got one."""

NO_REPLY = "(no reply: the turn ended after the tool results)"
"""The assistant note between tool results and the next prompt: the turn ended there."""

STEER_NOTE = "(noted the tool results; there is more input before I go on)"
"""The assistant note between tool results and a steer delivered right after them."""

EARLIER = "(the conversation continues)"
"""The user text put before an assistant message that would otherwise come first."""


def withdrawn(status: str, *, replied: bool) -> bool:
    """True when a prompt turn's prompt stays out of the model's history (it is marked
    ``unsent``): the turn ended without completing and left no message of its own (no reply
    text, no tool call); the transcript still shows it, with how it ended.

    Args:
        status: the turn's status (``completed``, ``interrupted``, ``failed``...).
        replied: True when the turn added any message after its prompt.
    """
    return status != "completed" and not replied


def well_formed(messages: Sequence[ChatMessage]) -> list[ChatMessage]:
    """Build the request's messages from a transcript (see the module docstring).

    Args:
        messages: the transcript, oldest first (not modified).

    Returns:
        messages that alternate user and assistant turns after an optional system message,
        with every tool call answered by exactly one result right after it. A transcript with
        no user message at all (only a system prompt, or nothing) is returned as it is, minus
        unsent prompts.
    """
    out: list[ChatMessage] = []
    pending_system: list[str] = []
    start = 0
    if messages and messages[0].role == "system":
        out.append(messages[0])
        start = 1
    index, n = start, len(messages)
    while index < n:  # one pass; the common message is appended as it is
        message = messages[index]
        index += 1
        if message.unsent:
            continue
        role = message.role
        if role == "user":
            if pending_system:
                text = "\n\n".join([*pending_system, message.content])
                pending_system.clear()
                message = replace(message, content=text)
            last = out[-1].role if out else None
            if last == "user":
                out[-1] = ChatMessage("user", _join(out[-1].content, message.content))
                continue
            if last == "tool":
                out.append(tool_results_note(message))
            out.append(message)
        elif role == "assistant":
            if not message.tool_calls and out and out[-1].role == "user":
                out.append(message)  # the usual reply to the usual prompt
            else:
                index = _add_assistant(out, message, messages, index)
        elif role == "system":
            pending_system.append(message.content)
        # a tool result whose call is not right before it is left out
    if pending_system:
        _add_user(out, "\n\n".join(pending_system))
    return out


def tool_results_note(following: ChatMessage) -> ChatMessage:
    """The assistant note that stands between tool results and the user message after them.

    Strict chat templates (Mistral's, Gemma's) refuse a ``user`` message right after ``tool``
    results; the note is chosen by what follows, the same in every request that carries it.

    Args:
        following: the user message right after the results.

    Returns:
        :data:`STEER_NOTE` before a steer (``following.steer``: the turn went on after it),
        else :data:`NO_REPLY` (the turn ended in tool results; the next prompt follows).
    """
    return ChatMessage("assistant", STEER_NOTE if following.steer else NO_REPLY)


def _add_user(out: list[ChatMessage], text: str) -> None:
    message = ChatMessage("user", text)
    last = out[-1].role if out else None
    if last == "user":
        out[-1] = ChatMessage("user", _join(out[-1].content, text))
        return
    if last == "tool":
        out.append(tool_results_note(message))
    out.append(message)


def _add_assistant(
    out: list[ChatMessage], message: ChatMessage, messages: Sequence[ChatMessage], index: int
) -> int:
    """Append an assistant message (and the results of its calls); return the next index."""
    role = out[-1].role if out else None
    if role in (None, "system"):
        out.append(ChatMessage("user", EARLIER))
    elif role == "assistant":  # a text reply, then another assistant message: one turn
        previous = out.pop()
        message = replace(message, content=_join(previous.content, message.content))
    clean = message if message.tool_call_id is None else replace(message, tool_call_id=None)
    out.append(clean)
    if not message.tool_calls:
        return index
    wanted = list(dict.fromkeys(call.id for call in message.tool_calls))
    results: dict[str, ChatMessage] = {}
    n = len(messages)
    while index < n and messages[index].role == "tool":
        result = messages[index]
        index += 1
        if result.tool_call_id in wanted and result.tool_call_id not in results:
            results[result.tool_call_id] = result
    for call_id in wanted:
        out.append(results.get(call_id) or ChatMessage("tool", NO_RESULT, tool_call_id=call_id))
    return index


def _join(first: str, second: str) -> str:
    if not first:
        return second
    if not second:
        return first
    return f"{first}\n\n{second}"
