"""Making large messages smaller without asking a model: tool outputs cut to a head and a tail.

A tool's output is mostly read for its start (what ran, the first lines) and its end (the
result, the error): the middle of a long log or listing is what can go. The cut leaves a
one-line note saying how much was left out, so neither the model nor the person mistakes the
shorter text for the whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from agent.context.calibration import TokenCalibration
from agent.provider.types import ChatMessage

KEEP_CHARS = 2000
"""Characters a cut tool output keeps by default (head and tail together)."""

_NOTE = "\n\n[... {count:,} characters of this output left out to fit the context window ...]\n\n"
_SHORT_NOTE = " [... {count:,} characters left out ...] "
SHORT_BELOW = 600
"""Below this many kept characters the note is the short one."""


def note_chars(keep_chars: int) -> int:
    """About how many characters the note of a cut keeping ``keep_chars`` takes."""
    return len(_SHORT_NOTE if keep_chars < SHORT_BELOW else _NOTE) + 4


def cut_middle(text: str, keep_chars: int) -> str:
    """``text`` with its middle replaced by a note, keeping about ``keep_chars`` characters.

    Three fifths of what is kept is the head, two fifths the tail; text no longer than
    ``keep_chars`` plus the note is returned whole. Below `SHORT_BELOW` kept characters the
    note is a short one.

    Args:
        text: any text.
        keep_chars: characters to keep (at least 2).
    """
    keep = max(2, keep_chars)
    note = _SHORT_NOTE if keep < SHORT_BELOW else _NOTE
    if len(text) <= keep + len(note) + 8:
        return text
    head = keep * 3 // 5
    tail = keep - head
    left_out = len(text) - head - tail
    return text[:head] + note.format(count=left_out) + text[len(text) - tail :]


def shrink_tool_results(
    messages: Sequence[ChatMessage],
    need_tokens: int,
    calibration: TokenCalibration,
    *,
    keep_chars: int = KEEP_CHARS,
    before: int | None = None,
) -> tuple[list[ChatMessage], int]:
    """Cut the largest tool results until about ``need_tokens`` tokens are saved.

    Args:
        messages: the transcript or request (not modified).
        need_tokens: tokens to save; the cutting stops once they are.
        calibration: counts what each cut saves.
        keep_chars: what a cut result keeps.
        before: only results at indexes below this are cut (None: all).

    Returns:
        the new messages and the tokens saved (which may fall short of ``need_tokens``).
    """
    out = list(messages)
    limit = len(out) if before is None else min(before, len(out))
    candidates = sorted(
        (i for i in range(limit) if out[i].role == "tool" and len(out[i].content) > keep_chars),
        key=lambda i: -len(out[i].content),
    )
    saved = 0
    for index in candidates:
        if saved >= need_tokens:
            break
        message = out[index]
        shorter = cut_middle(message.content, keep_chars)
        if shorter == message.content:
            continue
        cut = replace(message, content=shorter)
        saved += calibration.message_tokens(message) - calibration.message_tokens(cut)
        out[index] = cut
    return out, saved


FLOOR_CHARS = 200
"""The least a tool output is cut down to when nothing more can go."""


def cut_tool_results_to_fit(
    messages: Sequence[ChatMessage], need_tokens: int, calibration: TokenCalibration
) -> tuple[list[ChatMessage], int]:
    """Cut tool results, harder each round, until about ``need_tokens`` tokens are saved.

    Each round cuts the largest results of ``messages`` to a head and a tail
    (`shrink_tool_results`), keeping `KEEP_CHARS` first, then half as much each round, down
    to `FLOOR_CHARS` (each round cuts the original texts, so there is one note a result): a
    result larger than the whole window still leaves its start and its end, with the note
    saying how much was left out, and the turn goes on.

    Args:
        messages: the request (not modified).
        need_tokens: tokens to save.
        calibration: counts what each cut saves.

    Returns:
        the new messages and the tokens saved (short of ``need_tokens`` when even the
        floor is not enough).
    """
    keep = KEEP_CHARS
    while True:
        out, saved = shrink_tool_results(messages, need_tokens, calibration, keep_chars=keep)
        if saved >= need_tokens or keep <= FLOOR_CHARS:
            return out, saved
        keep = max(FLOOR_CHARS, keep // 2)
