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
from desk.widgets.markdown_chunk import render_strips
from desk.widgets.reply_body import ReplyBody, markdown_for
from desk.widgets.transcript import Transcript
from tests.desk.kit import wait_until

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


class TranscriptApp(App[None]):
    def compose(self) -> ComposeResult:
        yield Transcript(id="transcript")


@pytest.mark.parametrize("shape", [paragraph, lines])
async def test_a_paragraph_cut_into_pieces_reads_as_one_paragraph(shape: object) -> None:
    # Streamed, then finished: every row is the row the whole paragraph has when rendered in
    # one go (no line ends early where a piece ends).
    text = shape(1300)  # type: ignore[operator]
    assert len(find_cuts(text)) >= 2
    app = TranscriptApp()
    async with app.run_test(size=(80, 40)) as pilot:
        reply = await app.query_one(Transcript).add_reply("t1")
        await pilot.pause()
        body = reply.query_one(ReplyBody)
        for start in range(0, len(text), 500):
            body.append(text[start : start + 500])
        body.end_stream()
        sealed = body.sealed
        await wait_until(pilot, lambda: sealed.settled and sealed.size.width > 0, what="settled")
        await pilot.pause()
        width = sealed.content_size.width
        whole = render_strips(app, markdown_for(sealed)(text), width)
        shown = [sealed.render_line(y).text.rstrip() for y in range(sealed.size.height)]
        assert shown == [strip.text.rstrip() for strip in whole]


async def test_painting_the_end_of_a_long_paragraph_renders_only_what_is_painted() -> None:
    # The pieces above the one painted are settled later, in order (rendering the whole
    # paragraph first to go on from its rows took seconds for a 212 KB one); then it reads as
    # one paragraph all the same.
    text = paragraph(3000)
    app = TranscriptApp()
    async with app.run_test(size=(80, 12)) as pilot:
        transcript = app.query_one(Transcript)
        transcript.SETTLE_AFTER_S = 3600.0  # settled below, by hand
        reply = await transcript.add_reply("t1")
        await pilot.pause()
        body = reply.query_one(ReplyBody)
        body.append(text)
        body.end_stream()
        sealed = body.sealed
        await wait_until(pilot, lambda: sealed.renders > 0, what="the end painted")
        await pilot.pause()
        assert len(sealed.texts) >= 4 and sealed.renders <= 2
        while sealed.settle_one():
            pass
        await pilot.pause()
        width = sealed.content_size.width
        whole = render_strips(app, markdown_for(sealed)(text), width)
        shown = [sealed.render_line(y).text.rstrip() for y in range(sealed.size.height)]
        assert shown == [strip.text.rstrip() for strip in whole]
