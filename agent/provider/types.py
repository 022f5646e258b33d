"""Wire-level value types of the chat client: messages, tool calls, usage, completions."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call the model asked for.

    Attributes:
        id: the provider's call id (echoed back in the tool result).
        name: the function name.
        arguments: the raw JSON text of the arguments, as streamed (may be invalid JSON).
    """

    id: str
    name: str
    arguments: str

    def to_wire(self) -> dict[str, Any]:
        """The OpenAI ``tool_calls[]`` element."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """One message of a conversation, in the OpenAI chat format.

    Attributes:
        role: ``system``, ``user``, ``assistant`` or ``tool``.
        content: the text (may be empty for an assistant message with tool calls).
        tool_calls: calls made by an assistant message.
        tool_call_id: for a ``tool`` message, the call it answers.
        unsent: a user message of a turn that never ran (a queued prompt a system stop
            dropped, or one whose request could not fit the window): kept in the transcript,
            never sent to the model. Not part of equality: it says how the message is used,
            not what it is.
        steer: a user message a steer delivered into a running turn (not a turn's prompt);
            after tool results it is preceded by the steer's note, not by the note of a turn
            that ended there (:func:`agent.context.shape.well_formed`). Not part of equality.
    """

    role: Role
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    unsent: bool = field(default=False, compare=False)
    steer: bool = field(default=False, compare=False)

    def to_wire(self) -> dict[str, Any]:
        """The message as the JSON object the server expects."""
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [call.to_wire() for call in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        return out


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts the server reported for one request (tokens).

    ``cached_tokens`` is how many prompt tokens the server reused from its cache, when it says:
    OpenAI's ``usage.prompt_tokens_details.cached_tokens``, or llama.cpp's ``timings.cache_n``
    (:meth:`from_wire` is given the response's ``timings`` for that); 0 otherwise.
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cached_tokens: int = 0

    @classmethod
    def from_wire(cls, data: Any, timings: Any = None) -> Usage | None:
        """Parse an OpenAI ``usage`` object (and llama.cpp's ``timings`` beside it); None when
        ``usage`` is absent or not an object.

        Raises:
            TypeError, ValueError: a count that is not a number.
        """
        if not isinstance(data, dict):
            return None
        prompt = int(data.get("prompt_tokens") or 0)
        completion = int(data.get("completion_tokens") or 0)
        total = int(data.get("total_tokens") or prompt + completion)
        details = data.get("prompt_tokens_details")
        cached = 0
        if isinstance(details, dict) and details.get("cached_tokens") is not None:
            cached = int(details["cached_tokens"])
        elif isinstance(timings, dict) and timings.get("cache_n") is not None:
            cached = int(timings["cache_n"])
        return cls(prompt, completion, total, max(0, min(cached, prompt)))


@dataclass(frozen=True, slots=True)
class StreamDelta:
    """A piece of a streamed reply: visible ``content`` or ``reasoning`` text (either may be "").

    ``pieces`` counts the stream events it holds: 1 as received, more once joined.
    """

    content: str = ""
    reasoning: str = ""
    pieces: int = 1


@dataclass(slots=True)
class Completion:
    """The outcome of one chat-completion request.

    Attributes:
        content: the assistant text (for a stopped stream, what arrived before the stop).
        reasoning: reasoning text, when the server sent any.
        tool_calls: assembled tool calls, in index order.
        finish_reason: ``stop``, ``length``, ``tool_calls``...; None if the request never finished.
        usage: token counts, when the server reported them.
        pieces: streamed chunks that carried reply text or tool-call arguments (llama.cpp,
            vLLM, Ollama and OpenAI send one token a chunk); 0 for a reply that was not
            streamed.
        max_tokens: the most tokens the request asked the reply to have (None: none asked).
    """

    content: str = ""
    reasoning: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str | None = None
    usage: Usage | None = None
    pieces: int = 0
    max_tokens: int | None = None
