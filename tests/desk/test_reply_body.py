"""A long reply: cut into pieces at block boundaries, rendered only when seen, settled after."""

from __future__ import annotations

import asyncio
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from textual.app import App, ComposeResult
from textual.widgets import Static

from desk.markdown_cuts import cut_pieces, find_cuts
from desk.widgets.assistant_reply import AssistantReply
from desk.widgets.markdown_chunk import MarkdownChunk, render_strips
from desk.widgets.reply_body import ReplyBody, markdown_for
from desk.widgets.saved_reply import SavedReply
from desk.widgets.sealed_markdown import SealedMarkdown, estimate_rows
from desk.widgets.transcript import Transcript
from tests.desk.kit import wait_until

pytestmark = pytest.mark.anyio

FENCE = re.compile(r"^ {0,3}(```|~~~)")


def document(parts: int) -> str:
    """A reply of ``parts`` sections: heading, paragraph, list, code with a blank line inside."""
    return "\n\n".join(
        f"## Part {i}\n\nParagraph {i} says a few words about streams and stops.\n\n"
        f"- item {i}.1\n- item {i}.2\n\n```python\ndef part_{i}():\n\n    return {i}\n```"
        for i in range(1, parts + 1)
    )


BLOCKS = st.one_of(
    st.text(alphabet="abc *`", min_size=1, max_size=60).map(lambda t: "x" + t.strip()),
    st.builds(lambda a, b: f"- {a}\n- {b}", st.text("ab", min_size=1), st.text("ab", min_size=1)),
    st.builds(lambda body: f"```\n{body}\n\nafter blank\n```", st.text("ab \n", max_size=40)),
    st.builds(lambda body: f"    indented {body}\n\n    more", st.text("ab", max_size=20)),
)


@settings(max_examples=80, deadline=None)
@given(blocks=st.lists(BLOCKS, min_size=1, max_size=30), min_chars=st.integers(1, 120))
def test_cuts_never_split_a_block_and_pieces_are_at_least_min_chars(
    blocks: list[str], min_chars: int
) -> None:
    text = "\n\n".join(blocks) + "\n\ntail"
    cuts = [c.position for c in find_cuts(text, min_chars=min_chars, fence_chars=10**9)]
    assert cuts == sorted(set(cuts))
    previous = 0
    for cut in cuts:
        assert cut - previous >= min_chars
        assert text[cut - 2 : cut] == "\n\n" and text[cut] not in " \n"  # after a blank line
        before = text[:cut].splitlines()
        assert sum(1 for line in before if FENCE.match(line)) % 2 == 0  # not inside a fence
        previous = cut


def test_a_blank_line_inside_a_code_fence_is_never_a_cut() -> None:
    text = "intro\n\n```\ncode\n\nnot markdown\n```\n\nafter\n"
    cuts = find_cuts(text, min_chars=1, fence_chars=10**9)
    assert [c.position for c in cuts] == [7, text.index("after")]


def test_the_row_estimate_wraps_long_lines_and_counts_blank_ones() -> None:
    assert estimate_rows("one\n\n" + "x" * 25, 10) == 1 + 1 + 3


class ReplyApp(App[None]):
    """Just a transcript, as the desk lays it out."""

    def compose(self) -> ComposeResult:
        yield Transcript(id="transcript")


async def stream(reply: AssistantReply, text: str, step: int) -> None:
    for start in range(0, len(text), step):
        await reply.append(text[start : start + step])


def body_of(widget: AssistantReply) -> ReplyBody:
    return widget.query_one(ReplyBody)


def sealed_of(widget: AssistantReply | SavedReply) -> SealedMarkdown:
    return widget.query_one(SealedMarkdown)


async def test_text_that_scrolls_by_unseen_is_rendered_once_the_stream_ends() -> None:
    text = document(300)
    app = ReplyApp()
    async with app.run_test(size=(100, 30)) as pilot:
        transcript = app.query_one(Transcript)
        reply = await transcript.add_reply("t1")
        await stream(reply, text, 2000)
        await pilot.pause()
        sealed = body_of(reply).sealed
        pieces = len(sealed.texts)
        assert pieces > 20
        assert sealed.renders < pieces / 2  # only what was painted
        await reply.finish(text, "completed")
        settled = lambda: sealed.settled and not transcript.settling  # noqa: E731
        await wait_until(pilot, settled, timeout_s=30.0)  # 300 pieces, on a loaded machine
        assert reply.query_one(ReplyBody).text == text
        # Each piece rendered once (one or two may have been painted before the scrollbar
        # appeared and narrowed the view).
        assert len(sealed.texts) <= sealed.renders <= len(sealed.texts) + 2
        assert sealed.render_line(0).text.startswith("Part 1")


async def test_scrolling_up_mid_stream_shows_the_text_there() -> None:
    text = document(40)
    app = ReplyApp()
    async with app.run_test(size=(100, 30)) as pilot:
        transcript = app.query_one(Transcript)
        reply = await transcript.add_reply("t1")
        await stream(reply, text, 3000)
        transcript.scroll_home(animate=False)
        await pilot.pause()
        sealed = body_of(reply).sealed
        assert sealed.deferred  # still streaming
        assert sealed.render_line(0).text.startswith("Part 1")
        await wait_until(pilot, lambda: app.screen.get_widget_at(5, 1)[0] is sealed)


async def test_a_resize_settles_every_piece_again_at_the_new_width() -> None:
    text = document(30)
    app = ReplyApp()
    async with app.run_test(size=(100, 30)) as pilot:
        transcript = app.query_one(Transcript)
        reply = await transcript.add_reply("t1")
        await stream(reply, text, 5000)
        await reply.finish(text, "completed")
        sealed = body_of(reply).sealed
        await wait_until(pilot, lambda: sealed.settled and not transcript.settling)
        wide_rows = sealed.size.height
        await pilot.resize_terminal(50, 30)
        await wait_until(pilot, lambda: sealed.size.width < 50)
        await wait_until(pilot, lambda: sealed.settled and not transcript.settling)
        assert sealed.size.height > wide_rows  # narrower: the long lines wrap
        assert sealed.renders >= 2 * len(sealed.texts) - 2  # the visible ones may render early


async def test_a_saved_reply_is_drawn_like_the_finished_live_one() -> None:
    text = document(8)
    app = ReplyApp()
    async with app.run_test(size=(100, 40)) as pilot:
        transcript = app.query_one(Transcript)
        live = await transcript.add_reply("t1")
        await stream(live, text, len(text))  # one delta: cut as the saved text is
        await live.finish(text, "completed")
        saved = SavedReply(text)
        await transcript.mount(saved)
        await wait_until(pilot, lambda: not transcript.settling and sealed_of(saved).settled)
        live_sealed, saved_sealed = sealed_of(live), sealed_of(saved)
        assert live_sealed.texts == saved_sealed.texts
        assert live_sealed.size == saved_sealed.size
        rows = live_sealed.size.height
        assert [live_sealed.render_line(y).text for y in range(rows)] == [
            saved_sealed.render_line(y).text for y in range(rows)
        ]


def test_a_body_that_never_streamed_has_no_pending_settle() -> None:
    sealed = SealedMarkdown(str)
    assert sealed.settled and not sealed.deferred


CODE = st.lists(st.text(alphabet="abc =()", max_size=30), min_size=1, max_size=80)


@settings(max_examples=60, deadline=None)
@given(
    before=st.text(alphabet="ab \n", max_size=200),
    lines=CODE,
    fence_chars=st.integers(20, 400),
    split=st.integers(0, 5000),
)
def test_a_long_code_block_is_cut_into_pieces_that_each_render_as_code(
    before: str, lines: list[str], fence_chars: int, split: int
) -> None:
    text = "x" + before + "\n\n```python\n" + "\n".join(lines) + "\n```\n\nafter\n"
    # Seal as a stream would: a first delta, then the rest, then the end of the reply.
    first, rest = text[: split % len(text)], text[split % len(text) :]
    pieces, tail, fence = cut_pieces(first, find_cuts(first, fence_chars=fence_chars, min_chars=50))
    more, tail, fence = cut_pieces(
        tail + rest,
        find_cuts(tail + rest, open_fence=fence, fence_chars=fence_chars, min_chars=50),
        open_fence=fence,
        everything=True,
    )
    pieces += more
    assert tail == "" and fence is None
    assert "".join(p.text for p in pieces) == text
    for upper, lower in zip(pieces, pieces[1:], strict=False):
        assert upper.joined_below == lower.joined_above
    for piece in pieces:
        fences = [line for line in piece.markdown.splitlines() if FENCE.match(line)]
        assert len(fences) % 2 == 0  # every piece closes what it opens
        if piece.joined_above:
            assert piece.markdown.startswith("```python\n")


async def test_a_code_block_cut_while_streaming_reads_as_one_block() -> None:
    code = "\n".join(f"value_{i} = compute({i})  # step {i}" for i in range(120))
    text = f"Intro.\n\n```python\n{code}\n```\n\nAfter."
    app = ReplyApp()
    async with app.run_test(size=(100, 30)) as pilot:
        transcript = app.query_one(Transcript)
        reply = await transcript.add_reply("t1")
        await stream(reply, text, 97)
        body = body_of(reply)
        assert any(p.piece.joined_below for p in body.sealed._pieces)  # it was cut inside
        await reply.finish(text, "completed")
        sealed = body.sealed
        await wait_until(pilot, lambda: sealed.settled and not transcript.settling)
        whole = render_strips(app, markdown_for(body)(text), sealed.size.width)
        shown = [sealed.render_line(y) for y in range(sealed.size.height)]
        assert [s.text for s in shown] == [s.text for s in whole]


async def test_pieces_absorbed_before_the_completion_are_shown_by_it() -> None:
    text = document(20)
    app = ReplyApp()
    async with app.run_test(size=(100, 30)) as pilot:
        transcript = app.query_one(Transcript)
        reply = await transcript.add_reply("t1")
        half = len(text) // 2
        await reply.append(text[:half])
        drawn = sealed_of(reply).renders
        reply.absorb(text[half:])  # its completion is already queued
        assert sealed_of(reply).renders == drawn and reply.text == text
        await reply.finish(text, "completed")
        await wait_until(pilot, lambda: sealed_of(reply).settled and not transcript.settling)
        assert "".join(sealed_of(reply).texts) == text


def test_wide_characters_count_as_two_cells_in_the_estimate() -> None:
    assert estimate_rows("字" * 10, 10) == 2


async def test_text_that_arrives_before_the_body_is_composed_is_drawn_once_it_is() -> None:
    app = ReplyApp()
    async with app.run_test(size=(100, 30)) as pilot:
        body = ReplyBody()
        mounting = app.query_one(Transcript).mount(body)  # not awaited yet: no children
        body.append("First words, ")
        body.append("then more.")
        await mounting
        await wait_until(pilot, lambda: body.query_one(".live").display)
        assert body.text == "First words, then more."
        body.end_stream()
        await wait_until(pilot, lambda: body.sealed.texts == ["First words, then more."])
        await wait_until(pilot, lambda: body.sealed.settled)


async def test_a_finished_reply_settles_only_once_its_timer_fires(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Right after a reply ends (a stop most of all) the cores belong to the frame saying
    # idle, the next prompt and the model server: the pieces that scrolled by unseen are
    # rendered when the settle timer fires, not at once.
    monkeypatch.setattr(Transcript, "SETTLE_AFTER_S", 3600.0)
    text = document(60)
    app = ReplyApp()
    async with app.run_test(size=(100, 30)) as pilot:
        transcript = app.query_one(Transcript)
        reply = await transcript.add_reply("t1")
        await stream(reply, text, 2000)
        await reply.finish(text, "completed")
        sealed = body_of(reply).sealed
        await pilot.pause()
        renders = sealed.renders
        for _ in range(5):
            await pilot.pause(0.02)
        assert sealed.renders == renders and not sealed.settled
        assert transcript.settling
        transcript._start_settling()  # the timer fires
        await wait_until(pilot, lambda: sealed.settled and not transcript.settling)
        assert sealed.renders > renders


async def test_a_finish_restyles_the_reply_once_and_shows_its_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The frame that shows a reply's last words also restyles it (its live tail hidden, its
    # outcome and note shown): one style update for the reply and all inside it, not one per
    # class changed.
    text = document(3)
    app = ReplyApp()
    async with app.run_test(size=(100, 30)) as pilot:
        reply = await app.query_one(Transcript).add_reply("t1")
        await stream(reply, text, 50)
        await pilot.pause()
        body = body_of(reply)
        assert body.unsealed_chars > 0 and not body.query_one(".live").has_class("-blank")
        restyled: list[object] = []
        update_styles = app.update_styles

        def counted(node: object, animate: bool = True) -> None:
            restyled.append(node)
            update_styles(node, animate=animate)  # type: ignore[arg-type]

        monkeypatch.setattr(app, "update_styles", counted)
        await reply.finish(text, "failed", "the model server failed")
        assert restyled == [reply]
        assert reply.classes >= {"-failed", "-noted"} and not reply.has_class("-running")
        assert "".join(body.sealed.texts) == text and body.unsealed_chars == 0
        await pilot.pause()
        assert not body.query_one(".live").display and reply.query_one(".note").display


async def test_the_last_words_drawn_live_are_not_rendered_again_when_the_reply_ends() -> None:
    # The frame saying a reply ended also sealed its live tail: rendering the same Markdown
    # again at the same width took 3-5 ms of that frame. The lines drawn are kept instead.
    text = "Intro paragraph.\n\n```python\ndef f():\n\n    return 1\n```\n\nThe last words."
    app = ReplyApp()
    async with app.run_test(size=(100, 30)) as pilot:
        transcript = app.query_one(Transcript)
        reply = await transcript.add_reply("t1")
        await reply.append(text)
        await pilot.pause()  # a frame drew the live tail
        body = reply.query_one(ReplyBody)
        live = body.query_one(".live")
        assert body.unsealed_chars > 0 and live.drawn() is not None
        whole_before = render_strips(app, markdown_for(body)(text), body.size.width)
        renders = sealed_of(reply).renders
        await reply.finish(text, "completed")
        await pilot.pause()
        sealed = sealed_of(reply)
        await wait_until(pilot, lambda: sealed.settled and not transcript.settling)
        assert sealed.texts == [text] and sealed.renders == renders  # kept, not rendered
        shown = [sealed.render_line(y).text for y in range(sealed.size.height)]
        assert shown == [strip.text for strip in whole_before]  # and it reads the same


async def test_drawn_chars_counts_what_the_next_frame_shows() -> None:
    app = ReplyApp()
    async with app.run_test(size=(100, 30)) as pilot:
        transcript = app.query_one(Transcript)
        reply = await transcript.add_reply("t1")
        await reply.append("First words")
        await pilot.pause()
        body = reply.query_one(ReplyBody)
        assert body.drawn_chars == len("First words")
        await reply.append(" and more")
        assert body.drawn_chars == 0  # the live tail changed and is not rendered yet
        await pilot.pause()
        assert body.drawn_chars == len("First words and more")


async def test_a_piece_drawn_at_another_width_gets_its_real_height_once_painted() -> None:
    # The live tail was drawn wider than the sealed pieces are laid out (the transcript's
    # scrollbar appeared with the reply's last words): the piece is rendered again when
    # painted, and all its rows show.
    text = "Intro " + "word " * 150 + "\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nEND-MARK"
    app = ReplyApp()
    async with app.run_test(size=(60, 40)) as pilot:
        transcript = app.query_one(Transcript)
        reply = await transcript.add_reply("t1")
        await pilot.pause()
        sealed = body_of(reply).sealed
        sealed.remove_class("-empty")
        await wait_until(pilot, lambda: sealed.content_size.width > 0)
        width = sealed.content_size.width
        make = markdown_for(sealed)
        (piece,) = cut_pieces(text, [], everything=True)[0]
        wider = render_strips(app, make(piece.markdown), width + 9)
        real = render_strips(app, make(piece.markdown), width)
        assert len(wider) < len(real)
        sealed.add([piece], drawn=(width + 9, wider))
        sealed.undefer()
        await wait_until(pilot, lambda: sealed.size.height == len(real), what="its real height")
        assert sealed.render_line(len(real) - 1).text.strip() == "END-MARK"


async def test_a_height_found_while_a_layout_request_waits_is_laid_out() -> None:
    # The reply's end is sealed with the lines the live tail drew one cell wider (the
    # transcript's scrollbar appeared in the same frame), and a layout pass started by the live
    # tail lays the sealed widget out before the widget's own layout request was handed to the
    # screen (a busy machine: its queue is held here). That pass paints the piece: rendered at
    # the laid-out width it is taller than its estimate, and the widget must grow to show it.
    text = "Intro " + "word " * 150 + "\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nEND-MARK"
    app = ReplyApp()
    async with app.run_test(size=(60, 40)) as pilot:
        transcript = app.query_one(Transcript)
        reply = await transcript.add_reply("t1")
        await pilot.pause()
        body = body_of(reply)
        sealed = body.sealed
        sealed.remove_class("-empty")
        await wait_until(pilot, lambda: sealed.content_size.width > 0)
        width = sealed.content_size.width
        make = markdown_for(sealed)
        (piece,) = cut_pieces(text, [], everything=True)[0]
        real = render_strips(app, make(piece.markdown), width)
        assert estimate_rows(piece.markdown, width) < len(real)
        held, holding = asyncio.Event(), asyncio.Event()

        async def hold() -> None:
            holding.set()
            await held.wait()

        sealed.call_later(hold)
        await holding.wait()
        try:
            wider = render_strips(app, make(piece.markdown), width + 1)
            sealed.add([piece], drawn=(width + 1, wider))
            body.query_one(".live", MarkdownChunk).update(make("more"))
            await wait_until(None, lambda: sealed.renders > 0, timeout_s=5, what="a paint")
        finally:
            held.set()
        sealed.undefer()
        await wait_until(
            pilot, lambda: sealed.size.height == len(real), timeout_s=5, what="its real height"
        )
        assert sealed.render_line(len(real) - 1).text.strip() == "END-MARK"


async def test_a_reply_that_just_overflows_settles_with_the_scrollbar_and_all_its_rows() -> None:
    # The reply's end was drawn at the transcript's full width and, rendered, it overflows by
    # a row; laid out one cell narrower (the scrollbar appears) its height is an estimate that
    # fits, so the scrollbar goes away again. The height at each width must stay real once
    # known: the transcript settles with its scrollbar and the last row shown, instead of
    # laying the reply out at one width and then the other, frame after frame.
    text = "Intro " + "word " * 60 + "\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nEND-MARK"
    app = ReplyApp()
    async with app.run_test(size=(60, 14)) as pilot:
        transcript = app.query_one(Transcript)
        reply = await transcript.add_reply("t1")
        await pilot.pause()
        sealed = body_of(reply).sealed
        sealed.remove_class("-empty")
        await wait_until(pilot, lambda: sealed.content_size.width > 0)
        width = sealed.content_size.width
        make = markdown_for(sealed)
        (piece,) = cut_pieces(text, [], everything=True)[0]
        drawn = render_strips(app, make(piece.markdown), width)
        narrower = render_strips(app, make(piece.markdown), width - 1)
        assert estimate_rows(piece.markdown, width - 1) < len(narrower)
        sealed.add([piece], drawn=(width, drawn))
        sealed.undefer()

        def settled() -> bool:
            return (
                sealed.content_size.width == width - 1
                and sealed.size.height == len(narrower)
                and transcript.scroll_y == transcript.max_scroll_y > 0
            )

        await wait_until(pilot, settled, timeout_s=5, what="the scrollbar and every row")
        renders = sealed.renders
        for _ in range(10):
            await pilot.pause(0.02)
        assert settled() and sealed.renders == renders
        assert sealed.render_line(len(narrower) - 1).text.strip() == "END-MARK"


async def test_a_reply_finished_before_its_parts_are_composed_shows_its_end_once_they_are() -> None:
    # A turn's start registers its reply and the next event ends the turn: the reply is in the
    # transcript but its mount has not run yet (its parts are composed in its own task).
    app = ReplyApp()
    async with app.run_test(size=(100, 30)) as pilot:
        transcript = app.query_one(Transcript)
        reply = AssistantReply("t1")
        mounting = transcript.mount(reply)  # registered, not yet composed
        assert reply.is_attached and not reply.children
        await reply.append("The first words")
        await reply.finish("The first words and the last.", "interrupted", "■ stopped by you")
        await mounting
        await wait_until(pilot, lambda: body_of(reply).unsealed_chars == 0, what="sealed")
        assert "".join(body_of(reply).sealed.texts) == "The first words and the last."
        assert reply.classes >= {"-interrupted", "-noted"} and not reply.has_class("-running")
        note = reply.query_one(".note", Static)
        assert note.visual is not None and "stopped by you" in str(note.render())


async def test_a_reply_ended_while_it_is_being_removed_is_noted_without_an_error() -> None:
    # The app exits (its screens are pruned) while a reply's mount is under way: its parts are
    # never composed, and the turn's end that the view handles then is noted, not drawn.
    app = ReplyApp()
    async with app.run_test(size=(100, 30)) as pilot:
        transcript = app.query_one(Transcript)
        reply = AssistantReply("t1")
        transcript.mount(reply)
        removing = transcript.remove()  # as the exit prunes it: before the reply's parts exist
        assert reply.is_attached
        await reply.finish("words", "interrupted", "■ stopped by you")
        await removing
        await pilot.pause()
        assert (reply.outcome, reply.note) == ("interrupted", "■ stopped by you")
        assert not reply.children


async def test_a_stopped_reply_keeps_what_it_drew_until_it_is_drawn_whole() -> None:
    # A stop's completion paints "idle" first; the live tail's text appended since the last
    # frame is not rendered in that frame (it was, at up to 10 ms of the UI thread), and the
    # reply's finish then shows all of it.
    app = ReplyApp()
    async with app.run_test(size=(100, 30)) as pilot:
        transcript = app.query_one(Transcript)
        reply = await transcript.add_reply("t1")
        await reply.append("First words")
        await pilot.pause()  # a frame drew the live tail
        live = body_of(reply).query_one(".live", MarkdownChunk)
        await reply.append(" and the words the stop came after")  # not drawn yet
        reply.hold()  # the turn's completion: it was stopped
        await pilot.pause()
        shown = [live.render_line(y).text.rstrip() for y in range(live.size.height)]
        assert shown == ["First words"]  # the frame after the stop drew nothing new
        assert live.drawn() is None  # and what it shows is not taken for the new text
        reply.absorb(" and more")  # what the stream still had
        await reply.finish("First words and the words the stop came after and more", "interrupted")
        sealed = sealed_of(reply)
        await wait_until(pilot, lambda: sealed.settled and not transcript.settling)
        text = " ".join(sealed.render_line(y).text.strip() for y in range(sealed.size.height))
        assert text.strip() == "First words and the words the stop came after and more"


async def test_a_stopped_reply_seals_nothing_new_on_screen_until_it_is_drawn_whole() -> None:
    # Pieces sealed between the stream's last frame and the stop's completion were laid out
    # in the frame that says "idle": the reply grew, the transcript (following its end)
    # moved, and that frame sent the whole screen again (12 KB) instead of the status bar.
    first, second, third = (f"{word} " * 250 + "end.\n\n" for word in ("one", "two", "six"))
    app = ReplyApp()
    async with app.run_test(size=(100, 30)) as pilot:
        transcript = app.query_one(Transcript)
        reply = await transcript.add_reply("t1")
        await reply.append(first + second)  # the first paragraph sealed (800 characters)
        await pilot.pause()  # a frame laid it out
        sealed = sealed_of(reply)
        assert len(sealed.texts) == 1
        rows, height = sealed.virtual_size.height, reply.size.height
        await reply.append(third + "And the tail")  # the second one sealed, not laid out
        assert len(sealed.texts) == 2
        reply.hold()  # the stop's completion came before a frame
        await pilot.pause()
        await pilot.pause()
        assert (sealed.virtual_size.height, reply.size.height) == (rows, height)
        shown = " ".join(sealed.render_line(y).text.strip() for y in range(sealed.size.height))
        assert "two" not in shown
        await reply.finish(first + second + third + "And the tail", "interrupted")
        await wait_until(pilot, lambda: sealed.settled and not transcript.settling)
        text = " ".join(sealed.render_line(y).text.strip() for y in range(sealed.size.height))
        assert "two two" in text and "six six" in text and "And the tail" in text
        assert reply.size.height > height
