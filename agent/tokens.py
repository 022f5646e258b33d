"""Rough token counts, for decisions that only need an estimate (when and what to compress)."""

from __future__ import annotations

from agent.provider.types import ChatMessage

CHARS_PER_TOKEN = 4
"""OpenAI's rule of thumb for English text."""


def tokens_in_chars(chars: int) -> int:
    """Rough token count of ``chars`` characters of text (4 characters per token)."""
    return chars // CHARS_PER_TOKEN


def estimate_tokens(message: ChatMessage) -> int:
    """Rough token count of a message: 4 characters per token plus 4 for the framing.

    The 4-characters rule is OpenAI's rule of thumb for English text; it only needs to be good
    enough to decide when and what to compress.
    """
    chars = len(message.content)
    for call in message.tool_calls:
        chars += len(call.name) + len(call.arguments)
    return tokens_in_chars(chars) + 4
