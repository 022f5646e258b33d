"""Helpers for the context tests: the demo model as a strict 2,048-token llama.cpp."""

from __future__ import annotations

from typing import Any

from demo_model import DemoModelServer, count_prompt_tokens, tokenize_subword

PROSE = (
    "Compression exists so that a session keeps working as it grows. Tried as a new user "
    "would, against a real server with a small context, the session got stuck after a few "
    "long prompts, and only starting a new one got out of it. "
)


ROOMY_2K = 2_560
"""A window with the room a 2,048-token one had beside the tool definitions before
``edit_file`` and ``apply_patch`` joined them (about 400 tokens more), for the tests whose
prompts were sized to that room."""


def strict_2k(server: DemoModelServer, n_ctx: int = 2048) -> None:
    """Make ``server`` count like a real vocabulary, enforce ``n_ctx`` and a strict template."""
    server.configure(n_ctx=n_ctx, tokenizer="subword", strict_template=True)


def server_count(messages: list[dict[str, Any]], tools: list[Any] | None = None) -> int:
    """The demo model's own count of a request (subword tokenizer)."""
    return count_prompt_tokens(messages, tools=tools, tokenizer=tokenize_subword)


def prose(chars: int) -> str:
    """English prose of about ``chars`` characters."""
    return (PROSE * (chars // len(PROSE) + 1))[:chars]
