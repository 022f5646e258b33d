"""Why desk does not stream replies into Textual's ``Markdown`` widget: the two, side by side.

The same long Markdown reply (headings, paragraphs, lists, code; the document
``bench/stream_ingest.py`` streams) is fed as fast as possible, in deltas of ``--delta-chars``
characters (about 30 ms of a 5,000 tokens/s stream), into:

- ``textual-markdown-stream``: Textual's ``Markdown`` widget through ``Markdown.get_stream()``
  (its documented way to stream; it batches writes that arrive while it is busy), inside an
  anchored ``VerticalScroll``;
- ``desk-reply``: desk's :class:`desk.widgets.assistant_reply.AssistantReply` in its
  :class:`desk.widgets.transcript.Transcript` (pieces cut at block boundaries, one virtualised
  widget, rendered when seen).

Each runs headless (``run_test``, 120x40) in a fresh app. Figures per widget: ``seconds`` from
the first delta to the app being idle with everything shown, ``tokens_per_s`` (demo-model token
pieces of the document / seconds), and for the desk the pieces rendered.

Run: ``python bench/markdown_widgets.py [--tokens 10000] [--delta-chars 800]``; prints JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from textual.app import App, ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Markdown

sys.path.insert(0, str(Path(__file__).parent))
from stream_ingest import long_document  # noqa: E402

from demo_model.replies import tokenize  # noqa: E402
from desk.widgets.sealed_markdown import SealedMarkdown  # noqa: E402
from desk.widgets.transcript import Transcript  # noqa: E402


class MarkdownStreamApp(App[None]):
    """Textual's Markdown widget in an anchored scroll, as its documentation streams it."""

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="scroll"):
            yield Markdown()

    def on_mount(self) -> None:
        self.query_one("#scroll", VerticalScroll).anchor()


class DeskReplyApp(App[None]):
    """desk's transcript holding one streaming reply."""

    def compose(self) -> ComposeResult:
        yield Transcript()


def deltas(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


async def run_markdown_stream(pieces: list[str]) -> dict[str, Any]:
    app = MarkdownStreamApp()
    async with app.run_test(size=(120, 40)) as pilot:
        markdown = app.query_one(Markdown)
        started = time.perf_counter()
        stream = Markdown.get_stream(markdown)
        for piece in pieces:
            await stream.write(piece)
        await stream.stop()
        await pilot.pause()
        seconds = time.perf_counter() - started
        widgets = len(list(markdown.query("*")))
    return {"seconds": round(seconds, 3), "widgets": widgets}


async def run_desk_reply(pieces: list[str], text: str) -> dict[str, Any]:
    app = DeskReplyApp()
    async with app.run_test(size=(120, 40)) as pilot:
        transcript = app.query_one(Transcript)
        reply = await transcript.add_reply("bench")
        started = time.perf_counter()
        for piece in pieces:
            await reply.append(piece)
            await asyncio.sleep(0)  # let frames in, as deltas from the gateway would
        await reply.finish(text, "completed")
        await pilot.pause()
        seconds = time.perf_counter() - started
        sealed = reply.query_one(SealedMarkdown)
        rendered_at_end = sealed.renders
        while not sealed.settled or transcript.settling:  # the idle-time settling, not counted
            await pilot.pause(0.01)
    return {
        "seconds": round(seconds, 3),
        "pieces": len(sealed.texts),
        "pieces_rendered_before_idle": rendered_at_end,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--tokens", type=int, default=10_000)
    parser.add_argument("--delta-chars", type=int, default=800)
    args = parser.parse_args(argv)
    text = long_document(args.tokens)
    tokens = len(tokenize(text))
    pieces = deltas(text, args.delta_chars)
    results: dict[str, Any] = {"chars": len(text), "tokens": tokens, "deltas": len(pieces)}
    for name, run in (
        ("textual-markdown-stream", lambda: run_markdown_stream(pieces)),
        ("desk-reply", lambda: run_desk_reply(pieces, text)),
    ):
        figures = asyncio.run(run())
        figures["tokens_per_s"] = round(tokens / figures["seconds"])
        results[name] = figures
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
