"""What a prompt can script beyond the reply text: delegations, per-request pace, a paragraph.

- A line ``delegate: TASK`` (or ``delegate in background: TASK``) in the last user message makes
  the reply a call of the ``delegate`` tool with ``{"task": TASK, "background": false}`` (or
  ``true``), one call per line, when the request offers tools.
- ``[demo tps=N delay=S]`` anywhere in the last user message (outside a ``delegate:`` line)
  paces that request at N tokens per second after S seconds of prompt processing. A child agent
  sent a task with such a directive therefore replies slowly while its parent does not.
- `paragraph` is the ``reply_shape="paragraph"`` reply: one endless run of words with no line
  break or other Markdown block boundary, as a small or degenerate model writes; `lines` is
  the ``"lines"`` reply, the same words in short lines with no blank line between them (one
  paragraph of soft breaks); `document` is the ``"document"`` reply, an endless structured
  Markdown document (headings, paragraphs, lists, code blocks).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

_DELEGATE_RE = re.compile(r"^[ \t]*delegate( in background)?:[ \t]*(.+?)[ \t]*$", re.MULTILINE)
_DIRECTIVE_RE = re.compile(r"\[demo((?:\s+[a-z_]+=[0-9.]+)+)\s*\]")
_SETTING_RE = re.compile(r"([a-z_]+)=([0-9.]+)")
_DIRECTIVE_KNOBS = {"tps": "tokens_per_second", "delay": "prompt_delay_s"}
_PHRASE = (
    "the stream goes on and on without a single break while the model keeps talking about "
    "nothing in particular as small models sometimes do when they lose the thread and every "
    "word follows the last one in the same long line of text"
)
_WORDS = tuple(_PHRASE.split())


def delegate_calls(prompt: str) -> list[str]:
    """Return the JSON arguments of each ``delegate`` call the prompt scripts, in order.

    Args:
        prompt: the last user message's text.

    Returns:
        One ``{"task": ..., "background": ...}`` JSON text per ``delegate:`` line.
    """
    return [
        json.dumps({"task": match.group(2), "background": match.group(1) is not None})
        for match in _DELEGATE_RE.finditer(prompt)
    ]


def without_delegations(prompt: str) -> str:
    """Return the prompt without its ``delegate:`` lines (their text is the children's)."""
    return _DELEGATE_RE.sub("", prompt)


@dataclass(frozen=True)
class Directive:
    """Per-request knob changes a prompt asked for with ``[demo ...]``.

    Attributes:
        changes: `DemoConfig` knob name -> value (``tokens_per_second``, ``prompt_delay_s``).
    """

    changes: dict[str, float]


def directive_in(prompt: str) -> Directive:
    """Return the ``[demo ...]`` settings of a prompt, ignoring ``delegate:`` lines.

    Unknown names and unparsable numbers are ignored.
    """
    text = without_delegations(prompt)
    changes: dict[str, float] = {}
    for match in _DIRECTIVE_RE.finditer(text):
        for name, value in _SETTING_RE.findall(match.group(1)):
            knob = _DIRECTIVE_KNOBS.get(name)
            try:
                number = float(value)
            except ValueError:
                continue
            if knob is not None and number >= 0:
                changes[knob] = number
    return Directive(changes)


def paragraph(tokens: int) -> str:
    """Return a paragraph of exactly ``tokens`` word pieces, with no line break.

    Args:
        tokens: how many words (each a ``words``-tokenizer piece: a word and one space).
    """
    return "".join(_WORDS[i % len(_WORDS)] + " " for i in range(max(0, tokens)))


def lines(tokens: int, words_per_line: int = 12) -> str:
    """Return ``tokens`` word pieces in lines of ``words_per_line`` words, with no blank line.

    Every piece is a word and one space, except that the last word of a line ends with a
    newline instead, so ``tokenize`` gives exactly ``tokens`` pieces.
    """
    pieces = []
    for i in range(max(0, tokens)):
        end = "\n" if (i + 1) % words_per_line == 0 else " "
        pieces.append(_WORDS[i % len(_WORDS)] + end)
    return "".join(pieces)


def document(tokens: int) -> str:
    """Return an endless structured Markdown document of at least ``tokens`` word pieces.

    Sections of a heading, a paragraph with inline markup, a three-item list and a short
    Python code block, numbered 1, 2, 3..., until the document holds ``tokens`` pieces (the
    caller cuts it at the token cap).
    """
    sections: list[str] = []
    count = 0
    index = 0
    while count < tokens:
        index += 1
        section = (
            f"## Part {index}: measuring a stream\n\n"
            f"This paragraph {index} explains how the desk keeps up with a fast model. Each "
            "delta is coalesced by the gateway, handed to the UI as one message, and drawn "
            "as Markdown. **Bold** and `code` spans keep the parser honest.\n\n"
            f"- step {index}.1: read the chunk\n"
            f"- step {index}.2: append it to the document\n"
            f"- step {index}.3: paint what is visible\n\n"
            "```python\n"
            f"def part_{index}(tokens: int) -> float:\n"
            "    return tokens / 1000.0\n"
            "```\n\n"
        )
        sections.append(section)
        count += len(section.split())
    return "".join(sections)
