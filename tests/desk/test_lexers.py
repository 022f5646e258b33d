"""Code lexers are made off the UI thread: a block is drawn at once, plain, then in colour."""

from __future__ import annotations

import threading

import pytest
from pygments.lexer import Lexer
from textual.app import App, ComposeResult

import desk.widgets.reply_body
import desk.widgets.transcript
from desk.lexers import Lexers, fences, make_lexer
from desk.widgets.markdown_chunk import render_strips
from desk.widgets.reply_body import ReplyBody, markdown_for
from desk.widgets.sealed_markdown import SealedMarkdown
from desk.widgets.transcript import Transcript
from tests.desk.kit import wait_until

pytestmark = pytest.mark.anyio

CODE = "Here:\n\n```python\ndef stop(turn):\n    return turn.cancel()\n```\n\nDone."


class HeldLexers:
    """A :class:`Lexers` whose making of ``held`` waits until :attr:`release` is set."""

    def __init__(self, held: str) -> None:
        self.release = threading.Event()
        self.asked = threading.Event()

        def make(name: str) -> Lexer:
            if name == held:
                self.asked.set()
                assert self.release.wait(30.0)
            return make_lexer(name)

        self.lexers = Lexers(make)


def test_a_lexer_not_made_yet_is_plain_then_ready_and_the_thread_ends() -> None:
    held = HeldLexers("python")
    heard: list[str] = []
    held.lexers.on_ready(heard.append)
    assert held.lexers.get("python") is held.lexers.plain  # at once, not after the making
    assert held.asked.wait(30.0)
    assert held.lexers.get("python") is held.lexers.plain and heard == []
    held.release.set()
    assert held.lexers.join(30.0)
    assert heard == ["python"]
    assert held.lexers.get("python").name == "Python"
    assert not [t for t in threading.enumerate() if t.name == "desk-lexers" and t.is_alive()]


def test_a_lexer_that_fails_to_build_stays_plain_and_the_others_are_made() -> None:
    def make(name: str) -> Lexer:
        if name == "broken":
            raise RuntimeError("no such lexer")
        return make_lexer(name)

    lexers = Lexers(make)
    heard: list[str] = []
    lexers.on_ready(heard.append)
    lexers.get("broken")
    lexers.get("json")
    assert lexers.join(30.0)
    assert heard == ["broken", "json"]
    assert lexers.get("broken") is lexers.plain and lexers.get("json").name == "JSON"


def test_fences_finds_the_language_of_a_code_block() -> None:
    assert fences(CODE, "python")
    assert fences("~~~ rust\nfn main() {}\n~~~", "rust")
    assert not fences(CODE, "py") and not fences("python is nice", "python")


class ReplyApp(App[None]):
    def compose(self) -> ComposeResult:
        yield Transcript(id="transcript")


@pytest.mark.parametrize("finished", [False, True])
async def test_a_code_block_is_drawn_plain_at_once_and_in_colour_once_its_lexer_is_ready(
    monkeypatch: pytest.MonkeyPatch, finished: bool
) -> None:
    held = HeldLexers("python")
    monkeypatch.setattr(desk.widgets.reply_body, "lexers", lambda: held.lexers)
    monkeypatch.setattr(desk.widgets.transcript, "lexers", lambda: held.lexers)
    app = ReplyApp()
    async with app.run_test(size=(80, 20)) as pilot:
        transcript = app.query_one(Transcript)
        reply = await transcript.add_reply("t1")
        await reply.append(CODE)
        if finished:
            await reply.finish(CODE, "completed")
        await pilot.pause()
        body = reply.query_one(ReplyBody)
        assert held.asked.wait(30.0)  # the frame went out while the lexer was being made

        def shown() -> list[str]:
            widget = body.sealed if finished else body.query_one(".live")
            return [repr(widget.render_line(y)) for y in range(widget.size.height)]

        def coloured() -> list[str]:
            strips = render_strips(app, markdown_for(body)(CODE), body.size.width)
            widget = body.sealed if finished else body.query_one(".live")
            return [repr(s.apply_style(widget.rich_style)) for s in strips]

        plain = shown()
        held.release.set()
        assert held.lexers.join(30.0)
        expected = coloured()
        assert plain != expected
        await wait_until(pilot, lambda: shown() == expected, what="the block in colour")
        if finished:
            assert isinstance(body.sealed, SealedMarkdown)
