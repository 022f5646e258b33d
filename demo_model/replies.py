"""Deterministic replies of the demo model, and the token pieces they are streamed in.

Everything here is a pure function of the request's messages (and whether it offers tools),
so a test can predict exactly what the server will send:

- the last message is a ``tool`` result: a short text quoting the first line of each trailing
  tool result (`reply_for`);
- the last user message contains ``call tool NAME with {json}`` (or ``delegate: TASK`` lines,
  see `demo_model.scripted`) and the request has tools: one tool call per such phrase
  (`tool_calls_for`);
- the last user message contains ``reply with exactly: TEXT``: exactly ``TEXT`` (everything
  after the marker, minus one space);
- anything else: a Markdown answer (heading, echo of the prompt, bullet list, fenced code
  block, table) of about 250 token pieces.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .scripted import delegate_calls, without_delegations
from .tokens import Tokenizer
from .tokens import tokenize as tokenize

Message = Mapping[str, Any]

_EXACT_MARKER = "reply with exactly:"
_TOOL_RE = re.compile(r"call tool ([A-Za-z_][\w.\-]*) with ", re.IGNORECASE)
_WORD_RE = re.compile(r"[A-Za-z][A-Za-z'-]{3,}")
_ECHO_WORDS = 24
_TOPIC_WORDS = 6

# Overhead tokens per message, standing in for a chat template's role markers.
PROMPT_TOKENS_PER_MESSAGE = 4


def message_text(message: Message) -> str:
    """Return a message's text: its string content, or its text parts joined.

    Tool calls of an assistant message contribute their arguments. Unknown shapes give ``""``.
    """
    content = message.get("content")
    parts: list[str] = []
    if isinstance(content, str):
        parts.append(content)
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                parts.append(part["text"])
    tool_calls = message.get("tool_calls")
    if isinstance(tool_calls, list):
        for call in tool_calls:
            function = call.get("function") if isinstance(call, Mapping) else None
            if isinstance(function, Mapping) and isinstance(function.get("arguments"), str):
                parts.append(function["arguments"])
    return "\n".join(parts)


def count_prompt_tokens(
    messages: Sequence[Message],
    *,
    tools: Sequence[Any] | None = None,
    tokenizer: Tokenizer = tokenize,
) -> int:
    """Count a prompt's tokens the way the demo server does for ``usage.prompt_tokens``.

    The tools a request offers are rendered into the prompt by a real chat template, so they
    count too: their JSON text, as one more message.

    Args:
        messages: the request's ``messages``.
        tools: the request's ``tools``, if any.
        tokenizer: the server's tokenizer (`demo_model.tokens`).

    Returns:
        The sum over messages of ``len(tokenizer(message_text(m))) + PROMPT_TOKENS_PER_MESSAGE``,
        plus ``len(tokenizer(json.dumps(tools))) + PROMPT_TOKENS_PER_MESSAGE`` when tools are
        offered.
    """
    total = sum(len(tokenizer(message_text(m))) + PROMPT_TOKENS_PER_MESSAGE for m in messages)
    if tools:
        total += len(tokenizer(json.dumps(list(tools)))) + PROMPT_TOKENS_PER_MESSAGE
    return total


def last_user_text(messages: Sequence[Message]) -> str:
    """Return the text of the last ``user`` message, or ``""`` when there is none."""
    for message in reversed(messages):
        if message.get("role") == "user":
            return message_text(message)
    return ""


@dataclass(frozen=True)
class ToolCallPlan:
    """One tool call the demo model will make.

    Attributes:
        index: position in the reply's ``tool_calls`` list.
        id: call id, e.g. ``"call_3f2a..."``; deterministic in the messages.
        name: function name, taken verbatim from the prompt.
        arguments: the arguments text, verbatim from the prompt (a JSON object when it parses,
            otherwise the rest of the line, so invalid JSON can be tested too).
    """

    index: int
    id: str
    name: str
    arguments: str

    def argument_pieces(self) -> list[str]:
        """Split the arguments into the 1-3 pieces streamed after the id-and-name chunk."""
        size = len(self.arguments)
        if size < 3:
            return [self.arguments] if self.arguments else []
        cuts = [0, size // 3, (2 * size) // 3, size]
        return [self.arguments[a:b] for a, b in zip(cuts, cuts[1:], strict=False) if b > a]


StepKind = Literal["reasoning", "content", "tool_header", "tool_arguments"]


@dataclass(frozen=True)
class Step:
    """One generation step: one token, sent as one streamed chunk.

    Attributes:
        kind: what the chunk carries.
        text: the reasoning/content piece, or the arguments piece (empty for a tool header).
        tool: the tool call a ``tool_header``/``tool_arguments`` step belongs to.
    """

    kind: StepKind
    text: str
    tool: ToolCallPlan | None = None


@dataclass(frozen=True)
class ReplyPlan:
    """Everything the demo model will generate for one request, before any cap.

    Attributes:
        reasoning: reasoning text (empty unless reasoning was asked for).
        content: the reply text (empty when the reply is a tool call).
        tool_calls: the tool calls, in order (empty for a text reply).
    """

    reasoning: str
    content: str
    tool_calls: tuple[ToolCallPlan, ...]

    def steps(self, tokenizer: Tokenizer = tokenize) -> list[Step]:
        """Return the generation steps in order: reasoning, then content, then tool calls.

        A tool call is one ``tool_header`` step (id and name) followed by its
        `ToolCallPlan.argument_pieces`.

        Args:
            tokenizer: cuts the reasoning and content into one piece per step.
        """
        steps = [Step("reasoning", piece) for piece in tokenizer(self.reasoning)]
        steps += [Step("content", piece) for piece in tokenizer(self.content)]
        for call in self.tool_calls:
            steps.append(Step("tool_header", "", call))
            steps += [Step("tool_arguments", piece, call) for piece in call.argument_pieces()]
        return steps


def plan_reply(
    messages: Sequence[Message], *, tools: Sequence[Any] | None = None, reasoning: bool = False
) -> ReplyPlan:
    """Plan the full reply for a request.

    Args:
        messages: the request's ``messages``.
        tools: the request's ``tools`` (only whether it is non-empty matters).
        reasoning: whether the server emits reasoning before the reply.

    Returns:
        The reply plan; see the module docstring for the rules.
    """
    calls = tool_calls_for(messages, tools=tools)
    content = "" if calls else reply_for(messages, tools=tools)
    thinking = reasoning_for(messages) if reasoning else ""
    return ReplyPlan(reasoning=thinking, content=content, tool_calls=calls)


def tool_calls_for(
    messages: Sequence[Message], *, tools: Sequence[Any] | None = None
) -> tuple[ToolCallPlan, ...]:
    """Return the tool calls the demo model makes, or ``()`` for a text reply.

    There are calls only when ``tools`` is non-empty, the last non-system message is not a tool
    result, and the last user message contains ``call tool NAME with ARGS`` (once per call) or
    ``delegate: TASK`` / ``delegate in background: TASK`` lines (a ``delegate`` call with
    ``{"task": TASK, "background": false/true}``, see `demo_model.scripted`). A ``call tool``
    phrase inside a ``delegate:`` line is the child's task, not a call of this request.
    """
    if not tools or _trailing_tool_results(messages):
        return ()
    prompt = last_user_text(messages)
    own = without_delegations(prompt)  # a delegate line's text is the child's to act on
    found: list[tuple[str, str]] = []
    for match in _TOOL_RE.finditer(own):
        found.append((match.group(1), _arguments_at(own, match.end())))
    found.extend(("delegate", arguments) for arguments in delegate_calls(prompt))
    calls: list[ToolCallPlan] = []
    for name, arguments in found:
        digest = hashlib.sha256(
            f"{len(messages)}:{len(calls)}:{name}:{arguments}".encode()
        ).hexdigest()
        calls.append(ToolCallPlan(len(calls), f"call_{digest[:24]}", name, arguments))
    return tuple(calls)


def reply_for(messages: Sequence[Message], *, tools: Sequence[Any] | None = None) -> str:
    """Return the exact reply text (the streamed ``content``) for a request.

    Args:
        messages: the request's ``messages``.
        tools: the request's ``tools``; with tools, a ``call tool ...`` prompt yields a tool call
            and therefore an empty text.

    Returns:
        The reply text before any ``max_tokens`` cap. With a cap of ``n`` tokens the streamed
        text is ``"".join(tokenize(reply)[:n])``.
    """
    results = _trailing_tool_results(messages)
    if results:
        return _tool_result_reply(messages, results)
    if tool_calls_for(messages, tools=tools):
        return ""
    prompt = last_user_text(messages)
    at = prompt.lower().find(_EXACT_MARKER)
    if at >= 0:
        exact = prompt[at + len(_EXACT_MARKER) :]
        return exact[1:] if exact.startswith(" ") else exact
    return _markdown_reply(prompt)


def reasoning_for(messages: Sequence[Message]) -> str:
    """Return the reasoning text streamed before the reply when reasoning is on."""
    results = _trailing_tool_results(messages)
    if results:
        return "The tool has answered. I will quote the first line of its result and stop. "
    topic = _topic(last_user_text(messages))
    return (
        f'The user wrote about "{topic}". I should say what the demo model is, list the steps '
        "a real model would take, and show a short code example. "
    )


def _trailing_tool_results(messages: Sequence[Message]) -> list[Message]:
    """Return the run of ``tool`` messages at the end (ignoring system messages), in order."""
    results: list[Message] = []
    for message in reversed(messages):
        role = message.get("role")
        if role == "system":
            continue
        if role != "tool":
            break
        results.append(message)
    results.reverse()
    return results


def _tool_result_reply(messages: Sequence[Message], results: list[Message]) -> str:
    names: dict[str, str] = {}
    for message in messages:
        for call in message.get("tool_calls") or []:
            if isinstance(call, Mapping) and isinstance(call.get("function"), Mapping):
                names[str(call.get("id"))] = str(call["function"].get("name", "tool"))
    lines = []
    for result in results:
        name = names.get(str(result.get("tool_call_id")), str(result.get("name") or "tool"))
        first = message_text(result).strip().splitlines()
        quoted = first[0].strip() if first else "(empty)"
        lines.append(f"The tool `{name}` returned:\n\n> {quoted}\n")
    return "\n".join(lines) + "\nThat is what the tool reported."


def _arguments_at(text: str, start: int) -> str:
    """Return the arguments after ``with ``: a JSON object if one parses, else the line."""
    if text.startswith("{", start):
        try:
            _, end = json.JSONDecoder().raw_decode(text, start)
        except ValueError:
            pass
        else:
            return text[start:end]
    end = text.find("\n", start)
    return text[start:] if end < 0 else text[start:end]


def _topic(prompt: str) -> str:
    words = prompt.split()
    if not words:
        return "your message"
    topic = " ".join(words[:_TOPIC_WORDS])
    return topic + ("..." if len(words) > _TOPIC_WORDS else "")


def _keywords(prompt: str) -> str:
    seen: dict[str, int] = {}
    for position, word in enumerate(_WORD_RE.findall(prompt)):
        seen.setdefault(word.lower(), position)
    ranked = sorted(seen, key=lambda w: (-len(w), seen[w]))[:4]
    return ", ".join(ranked) if ranked else "none stood out"


_TIPS = (
    "A tip while you are here: the slower the model, the more it pays to ask a precise "
    "question. Name the file, the function or the error message you mean, and say what a "
    "good answer looks like.",
    "A tip while you are here: long conversations fill the context window. Desk compresses "
    "the middle of a long session into a summary, so the model keeps the start and the most "
    "recent turns in view.",
    "A tip while you are here: you can stop a turn at any moment and ask again. Nothing is "
    "lost, because the partial reply stays in the transcript, marked as interrupted.",
)


def _markdown_reply(prompt: str) -> str:
    words = prompt.split()
    echo = " ".join(words[:_ECHO_WORDS]) + (" ..." if len(words) > _ECHO_WORDS else "")
    topic = _topic(prompt)
    tip = _TIPS[hashlib.sha256(prompt.encode()).digest()[0] % len(_TIPS)]
    return f"""## About: {topic}

You wrote: "{echo or "(nothing)"}"

This answer comes from the **demo model** that ships with desk. It runs on your own machine, \
needs no download and streams a fixed reply at a steady pace, the way a small local model \
would. Press Esc at any moment: the stream stops at once and the server frees its slot, just \
like llama.cpp does.

What a real model would do with your message:

- pick out the key words ({_keywords(prompt)})
- plan the answer in a few small steps
- call a tool when the task needs files or commands
- write the reply in Markdown, with code where it helps

{tip}

```python
def answer(prompt: str) -> str:
    \"\"\"Return a short, deterministic answer.\"\"\"
    words = prompt.split()
    return " ".join(reversed(words))


print(answer({json.dumps(topic, ensure_ascii=False)}))
```

| step | what happens |
|------|--------------|
| 1 | the prompt is processed |
| 2 | tokens stream back one by one |
| 3 | a stop closes the connection |

To talk to a real model, start `llama-server` or Ollama on this machine, or set \
`OPENAI_BASE_URL` and `OPENAI_API_KEY`, then start desk again."""
