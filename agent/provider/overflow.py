"""Understanding a server's "the request does not fit the context window" answer.

Each kind of server phrases it differently; the counts in it are the server's own, so they are
the best calibration desk can get. Recognised (HTTP 400, also 413 and 422 for the last two):

- llama.cpp (``tools/server``, ``exceed_context_size_error``): ``{"error": {"code": 400,
  "message": "request (2786 tokens) exceeds the available context size (2048 tokens), try
  increasing it", "type": "exceed_context_size_error", "n_prompt_tokens": 2786, "n_ctx":
  2048}}``; older builds say "the request exceeds the available context size" without counts,
  and non-splittable inputs "input (N tokens) is larger than the max context size (M tokens)".
- vLLM and OpenAI: "This model's maximum context length is 4096 tokens. However, you requested
  5000 tokens (4500 in the messages, 500 in the completion)...", "...However, your messages
  resulted in 9000 tokens...", "...your request has 3500 input tokens...", OpenAI's code
  ``context_length_exceeded`` (sometimes with no counts at all).
- Hugging Face TGI: "`inputs` tokens + `max_new_tokens` must be <= 4096. Given: 4000 `inputs`
  tokens and 500 `max_new_tokens`".
"""

from __future__ import annotations

import re
from typing import Any

from agent.provider.errors import ContextOverflow

_STATUSES = (400, 413, 422)
_LLAMA = re.compile(
    r"(?:request|input) \((\d+) tokens\) (?:exceeds the available context size|is larger than "
    r"the max context size) \((\d+) tokens\)"
)
_MAXIMUM = re.compile(r"maximum context length is (\d+) tokens", re.IGNORECASE)
_REQUESTED = re.compile(
    r"you requested (\d+) tokens \((\d+) in the messages, (\d+) in the completion\)",
    re.IGNORECASE,
)
_PROMPT_ONLY = re.compile(
    r"(?:messages resulted in|request has|prompt contains) (\d+) (?:input )?tokens",
    re.IGNORECASE,
)
_TGI = re.compile(r"must be <= (\d+)\. Given: (\d+) `inputs` tokens and (\d+) `max_new_tokens`")
_MARKERS = (
    "exceed_context_size_error",
    "context_length_exceeded",
    "exceeds the available context size",
    "maximum context length",
    "larger than the max context size",
    "exceeds the context window",
    "context window of this model",
    "`max_new_tokens` must be <=",
)


def context_overflow(status: int, data: Any, text: str, message: str) -> ContextOverflow | None:
    """The typed error for a context-size rejection, or None when the answer is another one.

    Args:
        status: the HTTP status.
        data: the parsed JSON body, or None.
        text: the raw body.
        message: the one-line message to carry (already made by the caller).

    Returns:
        a `ContextOverflow` with the server's counts where it gave them.
    """
    if status not in _STATUSES:
        return None
    error = data.get("error", data) if isinstance(data, dict) else None
    fields = error if isinstance(error, dict) else {}
    kind = f"{fields.get('type') or ''} {fields.get('code') or ''}"
    said = str(fields.get("message") or "") or text
    lowered = f"{kind} {said}".lower()
    if not any(marker.lower() in lowered for marker in _MARKERS):
        return None
    prompt, window, completion = _counts(fields, said)
    return ContextOverflow(
        message,
        status=status,
        prompt_tokens=prompt,
        window=window,
        completion_tokens=completion,
    )


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if value > 0 else None


def _counts(fields: dict[str, Any], said: str) -> tuple[int | None, int | None, int | None]:
    """(prompt tokens, window, completion tokens asked) as far as the server said."""
    prompt, window = _int(fields.get("n_prompt_tokens")), _int(fields.get("n_ctx"))
    if prompt is not None or window is not None:
        return prompt, window, None
    if match := _LLAMA.search(said):
        return int(match.group(1)), int(match.group(2)), None
    if match := _TGI.search(said):
        return int(match.group(2)), int(match.group(1)), int(match.group(3))
    maximum = _MAXIMUM.search(said)
    window = int(maximum.group(1)) if maximum else None
    if match := _REQUESTED.search(said):
        return int(match.group(2)), window, int(match.group(3))
    if match := _PROMPT_ONLY.search(said):
        return int(match.group(1)), window, None
    return None, window, None
