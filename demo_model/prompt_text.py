"""The demo model's chat template as text: what ``/apply-template`` answers and ``/tokenize`` reads.

llama.cpp's ``POST /apply-template`` renders a chat request (``messages``, and ``tools`` when
given) with the model's template and answers ``{"prompt": TEXT}`` without running the model;
``POST /tokenize`` of that text (special tokens parsed, as by default) is then the server's own
count of the request. The demo model's template renders each message as four special tokens
around its text, ``<|im_start|><|ROLE|><|im_sep|>TEXT<|im_end|>``, and the tool definitions as
one more such message (role ``tools``, their JSON text), so that tokenizing the prompt gives
exactly the ``usage.prompt_tokens`` the chat endpoint reports for the same request
(:func:`demo_model.replies.count_prompt_tokens`), apart from the beginning-of-sequence token
``"add_special": true`` adds, which the chat endpoint does not count. (A message text that
itself contains a special marker is the one exception: ``/tokenize`` counts the marker as one
token, the chat endpoint as text.)
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from .replies import PROMPT_TOKENS_PER_MESSAGE, message_text
from .tokens import Tokenizer

START, SEP, END = "<|im_start|>", "<|im_sep|>", "<|im_end|>"
ROLES: tuple[str, ...] = ("system", "user", "assistant", "tool", "tools")
"""The roles that have a marker of their own; any other renders as ``user``."""

SPECIALS: tuple[str, ...] = (START, SEP, END, *(f"<|{role}|>" for role in ROLES))
"""Every special token of the template (each counts as one token)."""

_SPECIAL_RE = re.compile("|".join(re.escape(s) for s in SPECIALS))

assert PROMPT_TOKENS_PER_MESSAGE == 4  # START, the role, SEP and END


def _block(role: str, text: str) -> str:
    marker = f"<|{role}|>" if role in ROLES else "<|user|>"
    return f"{START}{marker}{SEP}{text}{END}"


def render_prompt(messages: Sequence[Mapping[str, Any]], tools: Sequence[Any] | None = None) -> str:
    """The prompt text of a chat request, as ``/apply-template`` answers it.

    Args:
        messages: the request's ``messages``.
        tools: the request's ``tools``, if any.

    Returns:
        the messages' blocks in order, then the tools' block when tools are offered.
    """
    parts = [_block(str(m.get("role") or "user"), message_text(m)) for m in messages]
    if tools:
        parts.append(_block("tools", json.dumps(list(tools))))
    return "".join(parts)


def tokenize_prompt(text: str, tokenizer: Tokenizer, *, parse_special: bool = True) -> list[str]:
    """Cut ``text`` into pieces, each special marker one piece when ``parse_special``.

    The text between markers is cut by ``tokenizer``; ``"".join(pieces) == text`` holds.
    """
    if not parse_special:
        return tokenizer(text)
    pieces: list[str] = []
    start = 0
    for match in _SPECIAL_RE.finditer(text):
        pieces += tokenizer(text[start : match.start()])
        pieces.append(match.group(0))
        start = match.end()
    pieces += tokenizer(text[start:])
    return pieces
