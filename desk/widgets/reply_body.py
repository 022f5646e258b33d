"""A reply's Markdown body that stays fast however long the reply grows.

Textual's ``Markdown`` widget makes a widget per block (a long reply: a thousand widgets), and
every streamed write restyles and re-lays them out: about 400 tokens/s on a 2-core machine. Here
the text is rendered with Rich's Markdown in pieces instead: the streaming tail is cut where
it can be without changing how it reads (see :mod:`desk.markdown_cuts`) and the pieces are
*sealed*: rendered at most once per width and never touched again; only the short live tail is
re-rendered per (coalesced) delta. All sealed pieces live in one virtualised
:class:`SealedMarkdown`, and while the reply streams they defer their rendering until painted, so
a fast stream that scrolls by costs little. A finished reply is static.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from rich.console import Console, ConsoleOptions, RenderResult
from rich.markdown import CodeBlock, Heading, ListItem
from rich.markdown import Markdown as RichMarkdown
from rich.segment import Segment
from rich.syntax import Syntax, SyntaxTheme
from textual.app import ComposeResult
from textual.strip import Strip
from textual.widget import Widget

from contract.text import terminal_safe
from desk.lexers import lexers
from desk.markdown_cuts import Piece, cut_pieces, find_cuts, live_markdown
from desk.widgets._css import css_beside
from desk.widgets._one_layout import one_layout_virtual_size
from desk.widgets.markdown_chunk import MarkdownChunk
from desk.widgets.sealed_markdown import SealedMarkdown


class _LeftHeading(Heading):
    """Rich centres ``#`` headings; in a transcript every heading reads better on the left."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        text = self.text.copy()
        text.justify = "left"
        yield text


@functools.lru_cache(maxsize=8)
def _syntax_theme(name: str) -> SyntaxTheme:
    return Syntax.get_theme(name)


class _CachedCodeBlock(CodeBlock):
    """Rich's code block, with the lexer and the colour theme looked up once per name (the
    lexer made off the UI thread the first time: the block is plain until it is ready, see
    :mod:`desk.lexers`)."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        code = str(self.text).rstrip()
        theme = _syntax_theme(self.theme)
        yield Syntax(code, lexers().get(self.lexer_name), theme=theme, word_wrap=True, padding=1)


class _DottedListItem(ListItem):
    """Rich numbers ordered lists "1 first"; Markdown readers expect "1. first"."""

    def render_number(
        self, console: Console, options: ConsoleOptions, number: int, last_number: int
    ) -> RenderResult:
        width = len(str(last_number)) + 3
        lines = console.render_lines(
            self.elements, options.update(width=options.max_width - width), style=self.style
        )
        style = console.get_style("markdown.item.number", default="none")
        numeral = Segment(f"{number}.".rjust(width - 1) + " ", style)
        padding = Segment(" " * width, style)
        for index, line in enumerate(lines):
            yield padding if index else numeral
            yield from line
            yield Segment("\n")


class ReplyMarkdown(RichMarkdown):
    """Rich's Markdown with left-aligned headings, "1." numbering, cached code-block lexers,
    and no blank first row (Rich starts a document that opens with a list with one)."""

    elements = {
        **RichMarkdown.elements,
        "heading_open": _LeftHeading,
        "list_item_open": _DottedListItem,
        "fence": _CachedCodeBlock,
        "code_block": _CachedCodeBlock,
    }

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        rendered = iter(super().__rich_console__(console, options))
        first = next(rendered, None)
        if first is not None and not (isinstance(first, Segment) and first.text == "\n"):
            yield first
        yield from rendered


def markdown_for(widget: Widget) -> Callable[[str], ReplyMarkdown]:
    """How ``widget`` turns a piece of reply into Rich Markdown (code colours follow the theme
    at the time the piece is rendered; control characters are made visible, see
    :mod:`agent.terminal_text`)."""

    def make(text: str) -> ReplyMarkdown:
        dark = widget.app.current_theme.dark if widget.is_attached else True
        shown = terminal_safe(text.strip("\n"))  # what the model said, never a terminal command
        return ReplyMarkdown(shown, code_theme="monokai" if dark else "default")

    return make


def sealed_pieces(text: str) -> list[Piece]:
    """A finished text cut into the pieces a stream of it would have sealed (no live tail)."""
    return cut_pieces(text, find_cuts(text), everything=True)[0]


def finished_markdown(owner: Widget, text: str, *, classes: str) -> SealedMarkdown:
    """A finished reply's text (saved, never streamed) in a :class:`SealedMarkdown` drawn
    for ``owner``."""
    sealed = SealedMarkdown(markdown_for(owner), classes=classes)
    sealed.add(sealed_pieces(text))
    return sealed


def _set_class(node: Widget, on: bool, name: str) -> bool:
    """Add or remove the class ``name`` of ``node`` without updating its styles; True if the
    classes changed (a style update is due)."""
    if node.has_class(name) == on:
        return False
    node.set_class(on, name, update=False)
    return True


class ReplyBody(Widget):
    """The Markdown of one reply: sealed pieces (one :class:`SealedMarkdown`), then the live tail.

    While the reply streams, sealed pieces are *deferred* (their height is estimated and they
    render only when painted), so text that scrolls by unseen during a fast stream costs no
    rendering until the stream ends. :meth:`end_stream` seals the tail too and lets every piece
    settle.

    Args:
        classes: CSS classes.
    """

    virtual_size = one_layout_virtual_size()  # see desk.widgets._one_layout

    DEFAULT_CSS = css_beside(__file__)

    def __init__(self, *, classes: str | None = None) -> None:
        super().__init__(classes=classes)
        self._sealed: list[str] = []
        self._tail = ""
        self._fence: str | None = None  # the code fence the live tail starts inside
        self._flowing = False  # the live tail goes on with a paragraph cut above
        self._make = markdown_for(self)
        self._restyle = False  # classes of the body or its children changed, styles not updated
        self._restyle_now = True  # False while end_stream gathers the changes into one update
        self._live_markdown = ""  # what the live tail was last given to draw
        self.streaming = True
        """True until :meth:`end_stream`: sealed pieces wait for a paint to render."""

    @property
    def text(self) -> str:
        """All the text shown."""
        return "".join(self._sealed) + self._tail

    @property
    def unsealed_chars(self) -> int:
        """Characters not sealed yet (the live tail, and what was absorbed after it): what
        :meth:`end_stream` has left to cut and render."""
        return len(self._tail)

    def compose(self) -> ComposeResult:
        yield SealedMarkdown(self._make, deferred=self.streaming, classes="sealed -empty")
        yield MarkdownChunk("", classes="live -blank")

    def on_mount(self) -> None:
        # Text may arrive while the children are still being mounted (a delta right behind
        # the reply's creation): it waited in the tail; draw it now.
        if self._tail:
            self._seal(everything=not self.streaming)
            self._draw_live()

    @property
    def drawn_chars(self) -> int:
        """Characters of the reply that the next frame shows as they are: the sealed pieces
        (rendered when painted) and the live tail once its latest text was rendered; text
        absorbed or appended since is not counted (benchmarks read it per frame)."""
        sealed = sum(len(text) for text in self._sealed)
        drawn = self._composed and self._live.drawn() is not None
        current = self._live_markdown == (
            live_markdown(self._tail, self._fence) if self._tail.strip() else ""
        )
        return sealed + (len(self._tail) if drawn and current else 0)

    @property
    def sealed(self) -> SealedMarkdown:
        """The widget holding the sealed pieces."""
        return self.query_one(".sealed", SealedMarkdown)

    @property
    def _composed(self) -> bool:
        return bool(self.children)

    @property
    def _live(self) -> MarkdownChunk:
        return self.query_one(".live", MarkdownChunk)

    def _seal(self, *, everything: bool = False) -> None:
        if not self._composed:
            return  # on_mount seals what waited
        cuts = find_cuts(self._tail, open_fence=self._fence)
        if not cuts and not (everything and self._tail.strip()):
            return
        pieces, self._tail, self._fence = cut_pieces(
            self._tail, cuts, open_fence=self._fence, everything=everything
        )
        self._sealed.extend(piece.text for piece in pieces)
        if pieces:
            self._flowing = pieces[-1].flows_on
        sealed = self.sealed
        sealed.add(pieces, drawn=self._drawn_as(pieces[-1]) if pieces else None)
        self._restyle |= _set_class(sealed, not sealed.texts, "-empty")

    def _drawn_as(self, piece: Piece) -> tuple[int, list[Strip]] | None:
        """The live tail's rendered lines when ``piece`` is that tail sealed as it was drawn
        (the reply's end: the same Markdown at the same width; the live tail drops the top
        row of a code block it continues, as a joined piece does), else None."""
        if piece.joined_below or piece.markdown != self._live_markdown:
            return None
        return self._live.drawn()

    def append(self, text: str) -> None:
        """Add streamed text: seal what is done, redraw the live tail."""
        self._tail += text
        self._seal(everything=not self.streaming)
        self._draw_live()

    def absorb(self, text: str) -> None:
        """Add streamed text without sealing or drawing it (:meth:`end_stream` follows)."""
        self._tail += text
        self.hold()

    def hold(self) -> None:
        """Show the reply as the last frame laid it out and drew it until :meth:`end_stream`
        or :meth:`set_text`: the pieces sealed since, and text appended but not drawn yet, are
        neither laid out nor rendered meanwhile (the turn was stopped; its reply is drawn whole
        after "idle", whose frame then repaints the status bar and the keys alone)."""
        if self._composed:
            self.sealed.hold()
            self._live.hold()

    def _draw_live(self) -> None:
        if not self._composed:
            return
        live = self._live
        blank = not self._tail.strip()
        joined = self._fence is not None  # the tail goes on with a code block cut above
        markdown = live_markdown(self._tail, self._fence) if not blank else ""
        if markdown != self._live_markdown or blank:
            self._live_markdown = markdown
            live.update(self._make(markdown) if not blank else "", trim_top=joined)
        gap = not blank and bool(self._sealed) and not joined and not self._flowing
        self._restyle |= _set_class(live, blank, "-blank") | _set_class(self, gap, "-gap")
        if self._restyle and self._restyle_now:
            self.restyle()

    def restyle(self) -> None:
        """Apply the class changes made since the last call to the body and its children
        (one style update for all of them; nothing when none changed)."""
        if self._restyle:
            self._restyle = False
            self.update_node_styles()

    def end_stream(self, *, restyle: bool = True) -> bool:
        """The reply is done: the tail is sealed too, and every piece now settles soon.

        Args:
            restyle: apply the class changes now; False leaves them to the caller, who
                updates the styles of a node above the body (once for the whole reply).

        Returns:
            True when classes changed and ``restyle`` was False: the caller's style update
            is due.
        """
        self.streaming = False
        self._restyle_now = False
        if self._composed:
            self.sealed.release()
            self._live.release()
        try:
            self._seal(everything=True)
            self._draw_live()
        finally:
            self._restyle_now = True
        due = False
        if restyle:
            self.restyle()
        else:
            due, self._restyle = self._restyle, False
        if self._composed:
            self.sealed.undefer()
        return due

    def set_text(self, text: str) -> None:
        """Show ``text`` instead of what was shown (e.g. the canonical text)."""
        if self._composed:
            sealed = self.sealed
            sealed.clear()
            sealed.add_class("-empty")
            self._live.release()
        self._sealed, self._tail, self._fence, self._flowing = [], text, None, False
        self._seal(everything=not self.streaming)
        self._draw_live()
