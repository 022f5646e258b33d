"""One endless paragraph (or one endless line) is cut into pieces too, so it streams like prose.

Without a block boundary the live tail held the whole paragraph and re-wrapped it on every
delta (a 212 KB paragraph: 314 ms a render); now the tail stays short whatever the shape.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from textual.app import App, ComposeResult

from demo_model.scripted import lines, paragraph
from desk.markdown_cuts import (
    CUT_LOOKAHEAD_CHARS,
    PARAGRAPH_SPLIT_CHARS,
    cut_pieces,
    find_cuts,
)
from desk.widgets.reply_body import ReplyBody

pytestmark = pytest.mark.anyio


def streamed_pieces(text: str, step: int) -> tuple[list[str], str]:
    """Cut ``text`` as a stream of ``step``-character deltas does: the pieces, and the tail."""
    tail, fence, pieces = "", None, []
    for start in range(0, len(text), step):
        tail += text[start : start + step]
        sealed, tail, fence = cut_pieces(tail, find_cuts(tail, open_fence=fence), open_fence=fence)
        pieces += [piece.text for piece in sealed]
    return pieces, tail


WORDS = st.sampled_from(["stream", "stop", "a", "the", "`code`", "**bold**", "end.", "ok"])


# Each example streams a text of thousands of words: 15 of them cover the three line styles
# and many steps while keeping the suite's time in bounds.
@settings(max_examples=15, deadline=None)
@given(
    words=st.lists(WORDS, min_size=1200, max_size=2500),
    newline_every=st.sampled_from([0, 7, 13]),
    step=st.integers(1, 400),
)
def test_a_streamed_paragraph_is_cut_where_its_finished_text_is(
    words: list[str], newline_every: int, step: int
) -> None:
    sep = [
        ("\n" if newline_every and (i + 1) % newline_every == 0 else " ") for i in range(len(words))
    ]
    text = "".join(w + s for w, s in zip(words, sep, strict=True))
    pieces, tail = streamed_pieces(text, step)
    finished = [p.text for p in cut_pieces(text, find_cuts(text), everything=True)[0]]
    assert "".join(pieces) + tail == text
    assert finished[: len(pieces)] == pieces  # the stream cut where the whole text is cut
    for piece in pieces:
        assert piece.count("`") % 2 == 0 and piece.count("**") % 2 == 0  # no span split
        assert PARAGRAPH_SPLIT_CHARS <= len(piece) <= PARAGRAPH_SPLIT_CHARS + 200
    assert len(tail) < PARAGRAPH_SPLIT_CHARS + CUT_LOOKAHEAD_CHARS + 100


def test_an_ordinary_paragraph_is_never_cut() -> None:
    text = paragraph(400)  # about 2,100 characters
    assert len(text) < PARAGRAPH_SPLIT_CHARS
    assert find_cuts(text) == []
    assert find_cuts(lines(400)) == []


@pytest.mark.parametrize("shape", [paragraph, lines])
def test_pieces_of_a_paragraph_flow_on_without_a_blank_row(shape: object) -> None:
    text = shape(3000)  # type: ignore[operator]
    pieces, _rest, _fence = cut_pieces(text, find_cuts(text), everything=True)
    assert len(pieces) >= 4
    assert all(p.flows_on for p in pieces[:-1]) and not pieces[-1].flows_on
    assert not any(p.joined_above or p.joined_below for p in pieces)  # nothing trimmed


class BodyApp(App[None]):
    def compose(self) -> ComposeResult:
        yield ReplyBody()


async def test_the_live_tail_stays_short_in_an_endless_paragraph() -> None:
    text = paragraph(12_000)  # about 64 KB, one line
    app = BodyApp()
    async with app.run_test(size=(100, 30)) as pilot:
        body = app.query_one(ReplyBody)
        longest = 0
        for start in range(0, len(text), 700):
            body.append(text[start : start + 700])
            longest = max(longest, len(body._tail))
        await pilot.pause()
        assert body.text == text
        assert longest < PARAGRAPH_SPLIT_CHARS + CUT_LOOKAHEAD_CHARS + 700
        assert not body.has_class("-gap")  # the tail goes on with the paragraph cut above it
