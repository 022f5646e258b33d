"""A reply's Markdown body that stays fast however long the reply grows.

Textual's ``Markdown`` widget makes a widget per block (a long reply: a thousand widgets), and
every streamed write restyles and re-lays them out: about 400 tokens/s on a 2-core machine. Here
the text is rendered with Rich's Markdown in chunks instead: once the streaming tail passes
:data:`SEAL_CHARS`, everything up to its last safe block boundary (a blank line outside a code
fence, followed by unindented text) is *sealed* into a static chunk that is rendered once and
never touched again; only the short live tail is re-rendered per (coalesced) delta. A finished
reply is a handful of static chunks.
"""

from __future__ import annotations

import re

from rich.console import Console, ConsoleOptions, RenderResult
from rich.markdown import Heading
from rich.markdown import Markdown as RichMarkdown
from textual.app import ComposeResult
from textual.widget import Widget

from desk.widgets._css import css_beside
from desk.widgets.markdown_chunk import MarkdownChunk

SEAL_CHARS = 1200
"""A live tail longer than this (characters) is sealed up to its last block boundary."""

_FENCE_RE = re.compile(r"^ {0,3}(```|~~~)")


class _LeftHeading(Heading):
    """Rich centres ``#`` headings; in a transcript every heading reads better on the left."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        text = self.text.copy()
        text.justify = "left"
        yield text


class ReplyMarkdown(RichMarkdown):
    """Rich's Markdown with left-aligned headings."""

    elements = {**RichMarkdown.elements, "heading_open": _LeftHeading}


def seal_point(text: str, min_chars: int = SEAL_CHARS) -> int:
    """Where ``text`` may be cut into a sealed part and a live tail (0: not yet).

    A cut goes right after a blank line that is outside any code fence and is followed by a
    line starting with a non-blank character, so no block (paragraph, list item continuation,
    fence, indented code) is split.

    Args:
        text: the live tail.
        min_chars: below this length nothing is cut.

    Returns:
        the index of the cut (the sealed part is ``text[:cut]``), or 0.
    """
    if len(text) < min_chars:
        return 0
    cut = 0
    in_fence = False
    position = 0
    previous_blank = False
    for line in text.splitlines(keepends=True):
        complete = line.endswith("\n")
        if previous_blank and not in_fence and line[:1].strip() and complete:
            cut = position
        if _FENCE_RE.match(line):
            in_fence = not in_fence
        previous_blank = not line.strip() and complete
        position += len(line)
    return cut


class ReplyBody(Widget):
    """The Markdown of one reply: sealed static chunks, then the live tail."""

    DEFAULT_CSS = css_beside(__file__)

    def __init__(self, *, classes: str | None = None) -> None:
        super().__init__(classes=classes)
        self._sealed: list[str] = []
        self._tail = ""

    @property
    def text(self) -> str:
        """All the text shown."""
        return "".join(self._sealed) + self._tail

    def compose(self) -> ComposeResult:
        yield MarkdownChunk("", classes="chunk -live -blank")

    def _markdown(self, text: str) -> ReplyMarkdown:
        dark = self.app.current_theme.dark if self.is_attached else True
        return ReplyMarkdown(text.strip("\n"), code_theme="monokai" if dark else "default")

    @property
    def _live(self) -> MarkdownChunk:
        return self.query_one(".-live", MarkdownChunk)

    async def _seal(self) -> None:
        cut = seal_point(self._tail)
        if not cut:
            return
        part, self._tail = self._tail[:cut], self._tail[cut:]
        self._sealed.append(part)
        await self.mount(MarkdownChunk(self._markdown(part), classes="chunk"), before=self._live)

    async def append(self, text: str) -> None:
        """Add streamed text: seal what is done, redraw the live tail."""
        self._tail += text
        await self._seal()
        self._draw_live()

    def _draw_live(self) -> None:
        live = self._live
        live.update(self._markdown(self._tail) if self._tail.strip() else "")
        live.set_class(not self._tail.strip(), "-blank")

    async def set_text(self, text: str) -> None:
        """Show ``text`` instead of what was streamed (e.g. the canonical text)."""
        await self.query(".chunk").exclude(".-live").remove()
        self._sealed, self._tail = [], text
        while True:
            before = len(self._tail)
            await self._seal()
            if len(self._tail) == before:
                break
        self._draw_live()
