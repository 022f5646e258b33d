"""Token counts from characters: the sizes desk measures, and the default it assumes.

A request's size is counted in characters (message texts, tool calls, the tool definitions it
offers, which a chat template renders into the prompt) and in messages (each costs a few
tokens of role markers). Turning characters into tokens needs a characters-per-token ratio;
:class:`agent.context.calibration.TokenCalibration` measures it per session from the server's
own counts. Until something is measured, :data:`DEFAULT_CHARS_PER_TOKEN` is assumed: below
OpenAI's 4-characters rule of thumb for English, because real vocabularies run 2.5-4.5
characters a token and code and non-English text fewer, and an estimate that undercounts
sends requests that do not fit.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agent.provider.types import ChatMessage

DEFAULT_CHARS_PER_TOKEN = 3.0
"""Characters per token assumed until the server's counts say otherwise (conservative)."""

MESSAGE_OVERHEAD_TOKENS = 4
"""Tokens a chat template adds around each message (role markers, separators)."""


def tokens_in_chars(chars: int, chars_per_token: float = DEFAULT_CHARS_PER_TOKEN) -> int:
    """Tokens in ``chars`` characters of text at ``chars_per_token`` (rounded up)."""
    return math.ceil(chars / chars_per_token) if chars > 0 else 0


def message_chars(message: ChatMessage) -> int:
    """Characters of a message as the template renders it: text, tool names and arguments."""
    chars = len(message.content)
    for call in message.tool_calls:
        chars += len(call.name) + len(call.arguments)
    return chars


def tools_chars(tools: Sequence[dict[str, Any]]) -> int:
    """Characters of the tool definitions a request offers (their JSON text)."""
    if not tools:
        return 0
    key = tuple(id(tool) for tool in tools)
    found = _TOOLS_CHARS.get(key)
    if found is None or found[0] != tools:  # the same definitions again (their ids reused)
        found = (list(tools), len(json.dumps(list(tools), separators=(",", ":"))))
        if len(_TOOLS_CHARS) >= TOOL_SETS_KEPT:
            _TOOLS_CHARS.clear()
        _TOOLS_CHARS[key] = found
    return found[1]


_TOOLS_CHARS: dict[tuple[int, ...], tuple[list[dict[str, Any]], int]] = {}
"""Tool definitions measured lately: a turn's requests offer the same ones every time."""

TOOL_SETS_KEPT = 8
"""Sets of tool definitions a cache keyed by their ids keeps (then it starts again). Each turn
builds its definitions anew (~10 KB for desk's own tools), so the hits are within a turn: a few
turns running at once need a few sets, and 64 kept up to ~1 MB for nothing."""


@dataclass(frozen=True, slots=True)
class RequestSize:
    """The size of a request before tokenization.

    Attributes:
        chars: characters of every message and of the tool definitions.
        messages: how many messages, counting the tool definitions as one.
    """

    chars: int
    messages: int


def request_size(
    messages: Sequence[ChatMessage], tools: Sequence[dict[str, Any]] = ()
) -> RequestSize:
    """Measure the request that sends ``messages`` offering ``tools``."""
    chars = sum([len(m.content) for m in messages])
    chars += sum([len(c.name) + len(c.arguments) for m in messages for c in m.tool_calls])
    chars += tools_chars(tools)
    return RequestSize(chars=chars, messages=len(messages) + (1 if tools else 0))


def estimate_tokens(message: ChatMessage) -> int:
    """Rough token count of one message at the default ratio, framing included.

    For what is stored beside a message; decisions about a request use the session's
    calibrated count instead.
    """
    return tokens_in_chars(message_chars(message)) + MESSAGE_OVERHEAD_TOKENS
