"""The demo model's tokenizers: how it cuts text into the pieces it counts and streams.

Two rules, chosen by ``DemoConfig.tokenizer``:

- ``words`` (the default): a run of non-whitespace characters with the whitespace that follows
  it, about 5-6 characters a token for English prose; easy to predict in tests.
- ``subword``: like a real BPE vocabulary at a glance: at most four ASCII letters a token (with
  one leading space), at most three digits, at most three punctuation marks or non-ASCII
  characters, a run of whitespace. English prose comes out at about 3.4 characters a token,
  JSON at 2.6 and code at fewer, as with real vocabularies (2.5-4.5), so a client that assumes
  4 characters a token undercounts, as it would against llama.cpp.

Both satisfy ``"".join(pieces) == text``.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable

Tokenizer = Callable[[str], list[str]]

TOKENIZERS: tuple[str, ...] = ("words", "subword")
"""Names accepted by ``DemoConfig.tokenizer``."""

_WORDS_RE = re.compile(r"\s+|\S+\s*")
_SUBWORD_RE = re.compile(r" ?[A-Za-z]{1,4}| ?\d{1,3}|\s+|[^\sA-Za-z\d]{1,3}")
_VOCAB = 32000


def tokenize(text: str) -> list[str]:
    """Split text into ``words`` pieces, one piece per token.

    A piece is a run of non-whitespace characters with the whitespace that follows it; leading
    whitespace is a piece of its own. ``"".join(tokenize(text)) == text`` always holds.

    Args:
        text: any text.

    Returns:
        The pieces, in order (empty for empty text).
    """
    return _WORDS_RE.findall(text)


def tokenize_subword(text: str) -> list[str]:
    """Split text into ``subword`` pieces (see the module docstring).

    Args:
        text: any text.

    Returns:
        The pieces, in order; ``"".join(pieces) == text``.
    """
    return _SUBWORD_RE.findall(text)


def tokenizer_for(name: str) -> Tokenizer:
    """Return the tokenizer called ``name`` (one of `TOKENIZERS`).

    Raises:
        ValueError: an unknown name.
    """
    if name == "words":
        return tokenize
    if name == "subword":
        return tokenize_subword
    raise ValueError(f"unknown tokenizer {name!r}: expected one of {TOKENIZERS}")


def token_id(piece: str) -> int:
    """A stable token id for a piece, as ``/tokenize`` reports it (0 <= id < 32000)."""
    return zlib.crc32(piece.encode()) % _VOCAB
