"""The demo model's knobs: one mutable dataclass, validated on every change."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .tokens import TOKENIZERS

STREAM_FAULTS: tuple[str, ...] = (
    "malformed",
    "early_close",
    "drop",
    "no_finish",
    "stall",
    "surrogate",
)
"""Fault names that act after ``fault_after_tokens`` tokens (see `DemoConfig.fault`)."""

REPLY_SHAPES: tuple[str, ...] = ("markdown", "paragraph", "lines", "document")
"""Values of `DemoConfig.reply_shape`."""

_HTTP_FAULT = re.compile(r"^http:([45]\d\d)$")

# Fields a request may not override through its ``demo`` extension object: they are
# properties of the server as a whole, not of one generation.
SERVER_WIDE_FIELDS: frozenset[str] = frozenset(
    {"slots", "api_key", "model", "strict_model", "n_ctx", "n_ctx_train", "tokenizer"}
)


SURROGATE_TEXT = "\ud800|\udfff|\ude00\ud83d|\ud83d\ude00"
"""What the ``surrogate`` fault sends: a lone high surrogate, a lone low one, a pair in the wrong
order, and a pair in the right order (U+1F600)."""

CONTEXT_FAULT = "context"
"""The fault that answers llama.cpp's context-size 400 whatever the prompt's size."""


def parse_fault(fault: str | None) -> tuple[str | None, int | None]:
    """Split a fault string into its kind and, for HTTP faults, the status code.

    Args:
        fault: ``None``, ``"http:<status>"`` (status 400-599), ``"context"`` or one of
            `STREAM_FAULTS`.

    Returns:
        ``(None, None)`` for no fault, ``("http", status)`` for an HTTP fault, otherwise
        ``(fault, None)``.

    Raises:
        ValueError: the string is not a known fault.
    """
    if fault is None:
        return None, None
    match = _HTTP_FAULT.match(fault)
    if match:
        return "http", int(match.group(1))
    if fault in STREAM_FAULTS or fault == CONTEXT_FAULT:
        return fault, None
    raise ValueError(
        f"unknown fault {fault!r}: expected None, 'http:<400-599>', {CONTEXT_FAULT!r} or one "
        f"of {STREAM_FAULTS}"
    )


@dataclass
class DemoConfig:
    """Knobs of the demo model server. Mutable; the server reads them per request.

    A request takes a snapshot of the knobs when it arrives (so changing the pace does not
    affect a generation already running), except ``slots``, which the slot queue reads at every
    decision. Change knobs of a running server with `DemoModelServer.configure` (thread-safe,
    wakes requests waiting for a slot) or ``POST /demo/config``.

    Attributes:
        tokens_per_second: generation pace in tokens per second; ``0`` or less means as fast as
            possible.
        prompt_delay_s: prompt-processing time in seconds, spent after a slot is acquired and
            before anything (not even response headers) is sent, as llama.cpp does.
        slots: number of requests generated at once; further requests wait in FIFO order
            for a free slot.
        max_tokens: server-side cap on completion tokens (reasoning, content and tool-call
            chunks all count); the request's ``max_tokens`` also caps. Hitting a cap ends the
            reply with ``finish_reason: "length"``.
        ignore_max_tokens: the request's ``max_tokens`` caps nothing (as a server replaying a
            recording, or one that ignores the field, does); the server's own cap still holds.
        n_ctx: context window in tokens, reported by ``/props`` and ``/slots`` (and as
            ``meta.n_ctx`` by ``/v1/models``); a prompt of this many tokens or more (counted by
            ``tokenizer``, tool definitions included) is refused with HTTP 400
            ``exceed_context_size_error`` and llama.cpp's body (``n_prompt_tokens``,
            ``n_ctx``), and generation stops with ``"length"`` when prompt plus completion
            reach it.
        n_ctx_train: the model's training context in tokens, reported as
            ``meta.n_ctx_train`` by ``/v1/models`` (as llama.cpp does); not enforced.
        tokenizer: ``"words"`` or ``"subword"`` (see `demo_model.tokens`): how prompts are
            counted, replies are cut into streamed tokens, and ``/tokenize`` answers.
        strict_template: check roles as Mistral's, Gemma's and Llama-2's chat templates do
            (see `demo_model.template`); a request that breaks the rule gets HTTP 400
            "Conversation roles must alternate user/assistant/user/assistant/...".
        template_tools: the chat template renders the tool definitions (True); False leaves
            them out of the prompt, as llama.cpp does without ``--jinja``: ``/apply-template``
            shows none, and the prompt's count has none.
        reply_shape: ``"markdown"`` (the deterministic replies of `demo_model.replies`) or
            ``"paragraph"`` (one endless run of words with no block boundary: one long line),
            ``"lines"`` (the same words in short lines, no blank line: one long paragraph of
            soft breaks) or ``"document"`` (an endless structured Markdown document); the
            last three are cut by the token cap with ``finish_reason: "length"``. Tool calls
            and exact replies are not affected.
        flush_each_token: stream as llama-server does: every token is its own SSE event,
            written on its own, and the generation waits a turn of the event loop after each
            so the event leaves before the next token is made, however fast the pace.
        model: the model id listed by ``/v1/models``.
        strict_model: when true, a request naming another model gets HTTP 404
            ``model_not_found``; when false any model name is accepted.
        api_key: when set, every model endpoint requires ``Authorization: Bearer <api_key>``
            and answers 401 otherwise (``/health`` and ``/demo/*`` stay open).
        fault: injected failure for chat completions: ``None``; ``"http:<status>"`` answers
            at once with that status and an OpenAI error body (429 and 503 add
            ``Retry-After: <retry_after_s>``); ``"context"`` answers llama.cpp's context-size 400
            with the prompt's true count and ``n_ctx``, fit or not (a server whose window is
            smaller than it says); ``"malformed"`` sends a broken JSON chunk after
            ``fault_after_tokens`` tokens, then carries on (non-streaming: a truncated JSON
            body); ``"early_close"`` ends the response cleanly after ``fault_after_tokens``
            tokens with no ``finish_reason`` and no ``[DONE]`` (non-streaming: the connection
            is closed in the middle of the body); ``"drop"`` closes the connection abruptly
            after ``fault_after_tokens`` tokens, leaving the chunked body incomplete;
            ``"no_finish"`` streams everything and ``[DONE]`` but never a ``finish_reason``;
            ``"stall"`` stops sending after ``fault_after_tokens`` tokens and waits until the
            client goes away; ``"surrogate"`` sends, after ``fault_after_tokens`` tokens, a
            content piece of lone surrogates spelled as JSON escapes (`SURROGATE_TEXT`: valid
            JSON, not valid Unicode), then carries on (non-streaming: the same piece inside
            the content).
        fault_after_tokens: how many tokens are sent before a stream fault acts.
        retry_after_s: the ``Retry-After`` seconds of an injected 429 or 503.
        fault_times: how many requests the fault applies to before it clears itself
            (``None``: every request), e.g. ``fault="http:429", fault_times=1`` fails once.
        reasoning: emit ``reasoning_content`` deltas before the content, as llama.cpp does
            with ``--reasoning-format deepseek``.
        usage_on_finish_chunk: put ``usage`` on the chunk that carries ``finish_reason``
            (always, as older llama.cpp builds do) instead of a final ``choices: []`` chunk
            sent only when ``stream_options.include_usage`` is true.
        cached_prompt_tokens: report this many of each prompt's tokens as reused from a
            cache (``usage.prompt_tokens_details.cached_tokens``, at most the prompt's size);
            0 reports no details.

    Raises:
        ValueError: on construction or `apply`, when a value is out of range or the fault is
            unknown.
        TypeError: when a value has the wrong type.
    """

    tokens_per_second: float = 30.0
    prompt_delay_s: float = 0.0
    slots: int = 1
    max_tokens: int = 400
    ignore_max_tokens: bool = False
    n_ctx: int = 8192
    n_ctx_train: int = 131072
    tokenizer: str = "words"
    strict_template: bool = False
    template_tools: bool = True
    reply_shape: str = "markdown"
    flush_each_token: bool = False
    model: str = "demo"
    strict_model: bool = False
    api_key: str | None = None
    fault: str | None = None
    fault_after_tokens: int = 3
    fault_times: int | None = None
    retry_after_s: float = 1.0
    reasoning: bool = False
    usage_on_finish_chunk: bool = False
    cached_prompt_tokens: int = 0

    def __post_init__(self) -> None:
        for item in dataclasses.fields(self):
            value = _check_type(item.name, str(item.type), getattr(self, item.name))
            setattr(self, item.name, value)
        self.validate()

    def validate(self) -> None:
        """Check value ranges.

        Raises:
            ValueError: a value is out of range or the fault string is unknown.
        """
        if self.prompt_delay_s < 0:
            raise ValueError("prompt_delay_s must be >= 0 seconds")
        if self.slots < 1:
            raise ValueError("slots must be >= 1")
        if self.cached_prompt_tokens < 0:
            raise ValueError("cached_prompt_tokens must be >= 0")
        if self.max_tokens < 1:
            raise ValueError("max_tokens must be >= 1")
        if self.n_ctx < 1:
            raise ValueError("n_ctx must be >= 1")
        if self.n_ctx_train < 1:
            raise ValueError("n_ctx_train must be >= 1")
        if self.tokenizer not in TOKENIZERS:
            raise ValueError(f"tokenizer must be one of {TOKENIZERS}")
        if self.reply_shape not in REPLY_SHAPES:
            raise ValueError(f"reply_shape must be one of {REPLY_SHAPES}")
        if self.fault_after_tokens < 0:
            raise ValueError("fault_after_tokens must be >= 0")
        if self.retry_after_s < 0:
            raise ValueError("retry_after_s must be >= 0 seconds")
        if self.fault_times is not None and self.fault_times < 1:
            raise ValueError("fault_times must be None or >= 1")
        if not self.model:
            raise ValueError("model must not be empty")
        parse_fault(self.fault)

    def copy(self) -> DemoConfig:
        """Return an independent copy (a snapshot) of the knobs."""
        return dataclasses.replace(self)

    def apply(self, changes: Mapping[str, object]) -> None:
        """Change several knobs at once; all or nothing.

        Ints are accepted for float knobs. Nothing changes when any value is invalid.

        Args:
            changes: knob name -> new value.

        Raises:
            KeyError: a name is not a knob.
            TypeError: a value has the wrong type.
            ValueError: a value is out of range.
        """
        known = {item.name: str(item.type) for item in dataclasses.fields(self)}
        coerced: dict[str, Any] = {}
        for name, value in changes.items():
            if name not in known:
                raise KeyError(f"unknown demo model knob {name!r}")
            coerced[name] = _check_type(name, known[name], value)
        candidate = dataclasses.replace(self, **coerced)
        for name in coerced:
            setattr(self, name, getattr(candidate, name))

    def to_dict(self) -> dict[str, Any]:
        """Return the knobs as a JSON-ready dict."""
        return dataclasses.asdict(self)


def _check_type(name: str, annotation: str, value: object) -> object:
    """Check ``value`` against a field annotation string such as ``"int | None"``.

    Returns the value, with ints turned into floats for float fields.
    """
    base, optional = annotation, False
    if annotation.endswith(" | None"):
        base, optional = annotation.removesuffix(" | None"), True
    if value is None:
        if optional:
            return None
        raise TypeError(f"{name} must not be None")
    if base == "bool":
        if isinstance(value, bool):
            return value
    elif base == "int":
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif base == "float":
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    elif base == "str":
        if isinstance(value, str):
            return value
    else:  # pragma: no cover - guards against a new field type nobody taught this function
        raise TypeError(f"{name}: unsupported knob type {annotation}")
    raise TypeError(f"{name} must be {annotation}, got {type(value).__name__}")
