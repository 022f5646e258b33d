"""Where a streaming Markdown reply may be cut into pieces that render the same on their own.

A piece is *sealed* once it is cut off the live tail: it is rendered at most once per width and
never touched again, so the cost of each streamed delta is the short live tail only. A cut goes

- after a blank line that is outside any code fence and is followed by a line starting with a
  non-blank character, so no paragraph, list item continuation, fence or indented code is split;
- or, inside a code fence that has grown past :data:`FENCE_SPLIT_CHARS` (a model writing a long
  file), before a line of code: the piece gets a closing fence and the text after it an
  opening one (the same marker and language), and the two are drawn joined, without the code
  block's padding rows in between (see :class:`desk.widgets.sealed_markdown.SealedMarkdown`).
  Without this the live tail would hold the whole block and be highlighted again on every delta.
- or, inside a paragraph that has grown past :data:`PARAGRAPH_SPLIT_CHARS` with no block
  boundary (a small model writing one endless paragraph, or one endless line): before one of
  its lines, or after a space in one long line (after a sentence's end when there is one in
  reach); the paragraph *flows on*: the next piece's first words go on in the row where the
  piece before ends, so it reads as one paragraph (see
  :class:`desk.widgets.sealed_markdown.SealedMarkdown`; only the live tail, while it
  streams, starts on a row of its own). Without this the live tail would hold the whole
  paragraph and wrap it again on every delta (a 212 KB paragraph: 314 ms a delta, and
  growing; a 3 KB one about 6 ms), so ordinary paragraphs are never cut.

A cut only depends on the text before it and on :data:`CUT_LOOKAHEAD_CHARS` after it, so a
stream and the finished text (a resumed session) are cut at the same places.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SEAL_CHARS = 800
"""The least length of a sealed piece, in characters."""

FENCE_SPLIT_CHARS = 1000
"""A code fence is cut inside once this many characters of it are in the live tail."""

PARAGRAPH_SPLIT_CHARS = 3000
"""A paragraph is cut inside once this many characters of it are in one piece."""

CUT_LOOKAHEAD_CHARS = 200
"""Characters a cut inside a long line looks ahead for a sentence's end (the cut waits until
they have arrived, so a stream and its finished text are cut alike)."""

_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SETEXT_RE = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_NOT_PROSE_RE = re.compile(r"^( {4}|\t| {0,3}([|>#]|[-*+][ \t]|\d{1,9}[.)][ \t]|<))")
_SENTENCE_END_RE = re.compile(r"[.!?:;][)\"'*_]* ")


@dataclass(frozen=True, slots=True)
class Cut:
    """A place to cut the live tail.

    Attributes:
        position: index into the tail (the piece is ``tail[previous:position]``).
        fence: the opening line of the code fence the cut falls inside (e.g. "```python"),
            or None for a cut between blocks.
        paragraph: the cut falls inside a paragraph (it flows on into the next piece).
    """

    position: int
    fence: str | None = None
    paragraph: bool = False


@dataclass(frozen=True, slots=True)
class Piece:
    """A sealed piece of reply.

    Attributes:
        text: the reply's own characters (joined, the pieces give back the reply).
        markdown: what is rendered: ``text`` with a reopened fence before it and/or a closing
            fence after it when a cut fell inside a code block.
        joined_above: it continues a code block cut above (drawn without a gap or top padding).
        joined_below: its code block goes on in the next piece (no gap, no bottom padding).
        flows_on: its last paragraph goes on in the next piece (no gap, nothing trimmed).
    """

    text: str
    markdown: str
    joined_above: bool = False
    joined_below: bool = False
    flows_on: bool = False


def _closing(fence: str) -> str:
    marker = _FENCE_RE.match(fence)
    return marker.group(1) if marker else "```"


def _closes(marker: str, fence: str) -> bool:
    """True if a fence line made of ``marker`` closes the block ``fence`` opened (CommonMark:
    the same character, at least as many of it)."""
    opening = _closing(fence)
    return marker[0] == opening[0] and len(marker) >= len(opening)


def _fence_after(line: str, fence: str | None) -> str | None:
    """The code fence open after ``line``, given the one open before it (None: outside code)."""
    marker = _FENCE_RE.match(line)
    if not marker:
        return fence
    if fence is None:
        return line.rstrip("\n")
    if _closes(marker.group(1), fence) and not line.strip(" `~\n"):
        return None
    return fence


def _prose(line: str) -> bool:
    """True for a line of plain paragraph text (not a table, quote, heading, list item,
    indented code, HTML, a fence or a setext underline)."""
    return (
        bool(line.strip())
        and not _NOT_PROSE_RE.match(line)
        and not _FENCE_RE.match(line)
        and not _SETEXT_RE.match(line)
    )


def _balanced(piece: str) -> bool:
    """True when no code span, emphasis or link is left open at the end of ``piece``."""
    return (
        piece.count("`") % 2 == 0
        and piece.count("**") % 2 == 0
        and piece.count("[") == piece.count("]")
        and piece.count("(") == piece.count(")")
    )


def _in_line_cut(text: str, last: int, line_start: int, line_end: int, para_chars: int) -> int:
    """Where to cut a long line after a space (absolute index), or -1 when not yet.

    The cut falls in ``[last + para_chars, + CUT_LOOKAHEAD_CHARS)``, after the last sentence's
    end there, else after its last space, and only once that whole window has arrived.
    """
    begin = max(last + para_chars, line_start + 1)
    end = begin + CUT_LOOKAHEAD_CHARS
    if end > line_end:
        return -1
    window = text[begin:end]
    ends = [m.end() for m in _SENTENCE_END_RE.finditer(window)]
    spaces = [ends[-1]] if ends else []
    at = window.rfind(" ")
    if at >= 0:
        spaces.append(at + 1)
    for offset in spaces:
        cut = begin + offset
        if cut < line_end and _balanced(text[last:cut]):
            return cut
    return -1


def find_cuts(
    text: str,
    *,
    open_fence: str | None = None,
    min_chars: int = SEAL_CHARS,
    fence_chars: int = FENCE_SPLIT_CHARS,
    para_chars: int = PARAGRAPH_SPLIT_CHARS,
) -> list[Cut]:
    """The cuts of ``text``, taken greedily so that pieces stay small.

    Args:
        text: the live tail.
        open_fence: the opening line of a code fence ``text`` starts inside (after an earlier
            cut inside it), or None.
        min_chars: the least length of a piece cut between blocks, in characters.
        fence_chars: the least length of a piece cut inside a code fence, in characters.
        para_chars: the least length of a piece cut inside a paragraph, in characters.

    Returns:
        the cuts in increasing order (empty when nothing can be sealed yet).
    """
    if len(text) < min(min_chars, fence_chars, para_chars):
        return []
    cuts: list[Cut] = []
    last = 0
    fence = open_fence
    position = 0
    previous_blank = False
    previous_prose = False
    for line in text.splitlines(keepends=True):
        complete = line.endswith("\n")
        if fence is None:
            if previous_blank and line[:1].strip() and complete and position - last >= min_chars:
                cuts.append(Cut(position))
                last = position
            elif (
                previous_prose
                and complete
                and _prose(line)
                and position - last >= para_chars
                and _balanced(text[last:position])
            ):
                cuts.append(Cut(position, paragraph=True))
                last = position
            if _prose(line):
                end = position + len(line)
                while (cut := _in_line_cut(text, last, position, end, para_chars)) >= 0:
                    cuts.append(Cut(cut, paragraph=True))
                    last = cut
            fence = _fence_after(line, None)
        elif (
            (fence := _fence_after(line, fence)) is not None  # still inside the block
            and complete
            and position - last >= fence_chars
        ):
            cuts.append(Cut(position, fence))
            last = position
        previous_blank = not line.strip() and complete
        previous_prose = fence is None and complete and _prose(line)
        position += len(line)
    return cuts


def cut_pieces(
    text: str, cuts: list[Cut], *, open_fence: str | None = None, everything: bool = False
) -> tuple[list[Piece], str, str | None]:
    """Cut ``text`` at ``cuts`` into pieces, plus what stays live.

    Args:
        text: the live tail.
        cuts: from :func:`find_cuts` on the same text and ``open_fence``.
        open_fence: the fence ``text`` starts inside, or None.
        everything: seal the rest too (the reply is finished): nothing stays live.

    Returns:
        the pieces, the new live tail, and the fence the new tail starts inside (or None).
    """
    pieces: list[Piece] = []
    start = 0
    fence = open_fence
    for cut in cuts:
        body = text[start : cut.position]
        before = f"{fence}\n" if fence else ""
        after = f"{_closing(cut.fence)}\n" if cut.fence else ""
        pieces.append(
            Piece(
                body,
                before + body + after,
                fence is not None,
                cut.fence is not None,
                flows_on=cut.paragraph,
            )
        )
        start, fence = cut.position, cut.fence
    rest = text[start:]
    if everything and rest.strip():
        before = f"{fence}\n" if fence else ""
        pieces.append(Piece(rest, before + rest, joined_above=fence is not None))
        return pieces, "", None
    return pieces, rest, fence


def closed_fences(text: str) -> str:
    """``text`` with a closing fence added if a code block is left open at its end (a reply
    stopped inside one), so what follows it (a stop receipt) is not read as code."""
    fence: str | None = None
    for line in text.splitlines():
        fence = _fence_after(line, fence)
    if fence is None:
        return text
    return f"{text.rstrip(chr(10))}\n{_closing(fence)}"


def markdown_tail(text: str, lines: int) -> str:
    """The last ``lines`` lines of ``text`` as Markdown that draws as they did in the whole: a
    code block they start inside reopened with its fence line, a table they start inside led
    by its header and separator rows, a code block left open closed (an empty string for no
    text)."""
    rows = (text[:-1] if text.endswith("\n") else text).split("\n")
    start = max(0, len(rows) - lines)
    fence: str | None = None
    for row in rows[:start]:
        fence = _fence_after(row, fence)
    lead: list[str] = []
    if fence is None and start and rows[start].lstrip().startswith("|"):
        first = start
        while first and rows[first - 1].lstrip().startswith("|"):
            first -= 1
        lead = rows[first : min(first + 2, start)]  # its header and separator, when cut off
    return closed_fences(live_markdown("\n".join(lead + rows[start:]), fence))


def live_markdown(tail: str, fence: str | None) -> str:
    """The Markdown to render for the live tail (reopening the fence it starts inside)."""
    return f"{fence}\n{tail}" if fence else tail
