"""The finished pieces of a reply in one virtualised widget: rendered only when seen.

A streamed reply is cut into pieces at block boundaries (see :mod:`desk.widgets.reply_body`).
Mounting a widget per piece made every delta's layout walk hundreds of widgets; here all the
pieces live in one Line-API widget (as Textual's ``Log`` keeps its lines), so the transcript's
layout costs the same however long a reply grows.

Each piece is rendered at most once per width, and only when needed:

- while the reply streams (*deferred*), a piece's height is an estimate from its text and it is
  rendered only if a line of it is painted, so text that scrolls by unseen during a fast stream
  costs no rendering at all;
- once it is no longer deferred, the widget posts :class:`SealedMarkdown.Unsettled` and whoever
  handles it (the transcript) calls :meth:`SealedMarkdown.settle_one` between frames until every
  estimate is replaced by the real height: the scrollbar becomes exact soon after a stream ends
  or the terminal is resized, and no frame ever waits for a whole reply to render.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from rich.cells import cell_len
from rich.console import RenderableType
from textual.geometry import Region, Size
from textual.message import Message
from textual.strip import Strip

from desk.lexers import fences
from desk.markdown_cuts import Piece
from desk.widgets._one_layout import one_layout_virtual_size
from desk.widgets._pass_style import PassStyle
from desk.widgets._remeasure import Remeasured
from desk.widgets.markdown_chunk import render_strips

MakeRenderable = Callable[[str], RenderableType]
"""Turns a piece's text into what is drawn (called at render time, so it sees the theme)."""


def estimate_rows(text: str, width: int) -> int:
    """Rows a Markdown piece takes at ``width`` cells, guessed without rendering it.

    Each source line wraps to ``ceil(cells / width)`` rows (at least one); a code fence's two
    fence lines stand in for the block's two padding rows. Exact for prose, lists and code;
    a table or a long heading may be off by a row or two until the piece is rendered.

    Args:
        text: the piece's Markdown.
        width: the width in cells.

    Returns:
        the estimated rows (at least 1).
    """
    width = max(1, width)
    lines = text.strip("\n").split("\n")
    return sum(max(1, math.ceil(cell_len(line) / width)) for line in lines)


def flowed_on(carried: Strip, rendered: Callable[[str], list[Strip]], markdown: str) -> list[Strip]:
    """The lines of ``markdown``, a paragraph's next piece, going on in the row ``carried``
    (the last row of the piece before) as if the paragraph had not been cut.

    The piece is rendered after a stand-in word as wide as ``carried``'s text, so that Rich
    wraps its first words into the rest of that row (or starts a new row, as the paragraph
    would), and the stand-in is then replaced by ``carried`` itself.

    Args:
        carried: the piece before's last row (drawn here instead of there).
        rendered: renders Markdown at the width in use, one strip per row.
        markdown: the piece's Markdown.

    Returns:
        the lines, the first one starting with ``carried``.
    """
    cells = cell_len(carried.text.rstrip())
    if not cells:
        return rendered(markdown)
    strips = rendered("x" * cells + " " + markdown.lstrip(" \n"))
    if not strips:
        return [carried.crop(0, cells)]
    first = strips[0]
    strips[0] = Strip.join([carried.crop(0, cells), first.crop(cells, first.cell_length)])
    return strips


@dataclass(slots=True)
class _Piece:
    """One sealed piece, and its lines for the width they were rendered at (and those for the
    width before, kept: see :meth:`rows`).

    A piece joined to a neighbour (a code block cut in two) loses the block's padding row on
    that side, so the two halves read as one block.
    """

    piece: Piece
    width: int = -1
    strips: list[Strip] = field(default_factory=list)
    estimated_width: int = -1
    estimated_rows: int = 0
    alone: bool = False
    """It goes on with the paragraph above but was rendered on its own (the piece above was
    not rendered at that width then): rendered again once that one is."""
    before: tuple[int, list[Strip], bool] = (-1, [], False)

    @property
    def trimmed(self) -> int:
        """Rows dropped from the rendering: one per joined side."""
        return int(self.piece.joined_above) + int(self.piece.joined_below)

    def rows(self, width: int) -> int:
        """Its height at ``width``: real if it was rendered at that width (the last width or the
        one before), else estimated.

        The rendering for the width before is kept because a scrolling parent lays its content
        out at two widths, with and without its scrollbar: were the height at one of them an
        estimate as soon as the piece is rendered at the other, a piece whose estimate is a
        row or two short could show the scrollbar at one width and hide it at the other, frame
        after frame, its last rows never shown.
        """
        if self.width == width:
            return len(self.strips)
        if self.before[0] == width:
            return len(self.before[1])
        if self.estimated_width != width:
            rows = estimate_rows(self.piece.markdown, width) - self.trimmed
            self.estimated_rows = max(1, rows)
            self.estimated_width = width
        return self.estimated_rows

    def keep(self, strips: list[Strip]) -> list[Strip]:
        """``strips`` without the padding rows on the joined sides."""
        top = 1 if self.piece.joined_above else 0
        bottom = len(strips) - (1 if self.piece.joined_below else 0)
        return strips[top:bottom] if bottom > top else strips[:1]

    def show(self, width: int, strips: list[Strip], *, alone: bool = False) -> None:
        """Use ``strips`` as its lines at ``width``; the current ones become the width before."""
        if self.width >= 0 and self.width != width:
            self.before = (self.width, self.strips, self.alone)
        self.width, self.strips, self.alone = width, strips, alone

    def swap(self, width: int) -> bool:
        """Show the lines kept for ``width``, if those of the width before are for it."""
        if self.before[0] != width or width < 0:
            return False
        self.show(width, self.before[1], alone=self.before[2])
        return True

    def forget(self) -> None:
        """Drop every rendering (the next paint or settle renders it again)."""
        self.width, self.alone, self.before = -1, False, (-1, [], False)


class SealedMarkdown(Remeasured):
    """Finished Markdown pieces, one blank row between two (none between the halves of a cut
    code block or paragraph), rendered lazily.

    A paragraph cut into pieces reads as one: a piece that goes on with the paragraph of the
    piece before is rendered with that piece's last row as its own first (see
    :func:`flowed_on`) once the piece before is rendered at the same width.

    Args:
        make: turns a piece's Markdown into a renderable (e.g. Rich Markdown).
        deferred: True while the owner streams (pieces render only when painted).
        classes: CSS classes.
    """

    virtual_size = one_layout_virtual_size()  # see desk.widgets._one_layout

    DEFAULT_CSS = """
    SealedMarkdown { height: auto; }
    """

    class Unsettled(Message):
        """Some pieces show an estimated height: call ``settle_one()`` when there is time."""

        def __init__(self, widget: SealedMarkdown) -> None:
            super().__init__()
            self.widget = widget
            """The widget to settle."""

    def __init__(
        self, make: MakeRenderable, *, deferred: bool = False, classes: str | None = None
    ) -> None:
        super().__init__(classes=classes)
        self._make = make
        self.deferred = deferred
        """True while pieces wait for a paint to render (set False with :meth:`undefer`)."""
        self._pieces: list[_Piece] = []
        self._laid_out = 0  # pieces the last layout counted
        self._held: int | None = None  # pieces shown while held (see hold)
        self._starts: list[int] = []
        self._layout_width = -1
        self._settle_posted = False
        self._pass_style = PassStyle(self)
        self.renders = 0
        """How many times a piece was rendered (read by tests and benchmarks)."""

    @property
    def texts(self) -> list[str]:
        """The pieces' own texts, in order (joined: the reply so far)."""
        return [piece.piece.text for piece in self._pieces]

    @property
    def settled(self) -> bool:
        """True when every piece's height is its rendered one at the last laid-out width (a
        widget never laid out is settled only while it holds nothing)."""
        width = self._layout_width
        shown = self._pieces[: self._count()]
        return all(piece.width == width >= 0 and not piece.alone for piece in shown)

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, self._theme_changed)

    def _theme_changed(self, _theme: object) -> None:
        for piece in self._pieces:
            piece.forget()  # colours (and the light-theme styles) change: render again
        self.refresh(layout=True)

    def redraw_code(self, language: str) -> None:
        """Render again, when next painted or settled, the pieces with a code block in
        ``language`` (its lexer became ready: they were drawn plain), and the pieces that go
        on with their last row."""
        stale = [
            index
            for index, piece in enumerate(self._pieces)
            if fences(piece.piece.markdown, language)
        ]
        for index in stale:
            self._pieces[index].forget()
            while self._hands_on(index):
                index += 1
                self._pieces[index].forget()
        if stale:
            self.refresh(layout=True)
            self._request_settle()

    def add(self, pieces: Sequence[Piece], *, drawn: tuple[int, list[Strip]] | None = None) -> None:
        """Append pieces (shown after the ones already here).

        Args:
            pieces: the pieces, in order.
            drawn: the last piece's lines already rendered elsewhere (the live tail it was),
                as ``(width in cells, lines without the padding rows of its joined sides)``:
                kept instead of rendering the piece again at that width.
        """
        added = [_Piece(piece) for piece in pieces if piece.text.strip()]
        self._pieces.extend(added)
        last = len(self._pieces) - 1
        # (not when its first row goes on from the piece above: the tail was drawn alone)
        if drawn and added and added[-1].piece is pieces[-1] and not self._hands_on(last - 1):
            added[-1].show(drawn[0], list(drawn[1]))
        self.refresh(layout=True)

    def clear(self) -> None:
        """Remove every piece (and end a :meth:`hold`)."""
        self._pieces.clear()
        self._held = None
        self.refresh(layout=True)

    def hold(self) -> None:
        """Show the pieces the last layout counted, as they were, until :meth:`release`:
        pieces added meanwhile are kept but neither laid out nor drawn (a stopped reply's
        frame that says "idle" carried the text sealed since the stream's last frame: the
        transcript moved, and the whole of it was sent to the terminal again, 12 KB)."""
        if self._held is None:
            self._held = self._laid_out

    def release(self) -> None:
        """End a :meth:`hold`: every piece is laid out and drawn again."""
        if self._held is not None:
            self._held = None
            self.refresh(layout=True)

    def _count(self) -> int:
        """How many pieces are shown: all, or those of the last layout while held."""
        return len(self._pieces) if self._held is None else min(self._held, len(self._pieces))

    def undefer(self) -> None:
        """Stop deferring: the estimated heights are settled soon, off the caller's turn."""
        self.deferred = False
        self._request_settle()

    def _request_settle(self) -> None:
        if not self.deferred and not self._settle_posted and not self.settled:
            self._settle_posted = True
            self.post_message(self.Unsettled(self))

    def _hands_on(self, index: int) -> bool:
        """True if piece ``index``'s last row is drawn as the next piece's first (its
        paragraph flows on into that piece)."""
        return 0 <= index < self._count() - 1 and self._pieces[index].piece.flows_on

    def _rows(self, index: int, width: int) -> int:
        """Rows piece ``index`` takes at ``width`` (without a row it hands on)."""
        return self._pieces[index].rows(width) - int(self._hands_on(index))

    def _ready(self, index: int, width: int) -> bool:
        """True if piece ``index`` has its lines for ``width`` (kept ones are put back)."""
        piece = self._pieces[index]
        return piece.width == width or piece.swap(width)

    def _render_piece(self, index: int, width: int) -> bool:
        """Render piece ``index`` at ``width`` unless its lines for it are there (kept ones are
        put back), or it was rendered on its own and the piece above it now is rendered at
        that width; True if its height differs from the one in use.

        A piece that goes on with the paragraph above is rendered with that piece's last row
        as its first when that piece is rendered at ``width``, else on its own: never the
        pieces above it first (a resize at the end of an endless paragraph would render all
        of it in one frame); those are settled in order later.
        """
        piece = self._pieces[index]
        continues = self._hands_on(index - 1)
        joinable = continues and self._ready(index - 1, width)
        if self._ready(index, width) and not (piece.alone and joinable):
            return False
        before = piece.rows(width)

        def rendered(text: str) -> list[Strip]:
            return render_strips(self.app, self._make(text), width)

        if joinable and self._pieces[index - 1].strips:
            strips = flowed_on(self._pieces[index - 1].strips[-1], rendered, piece.piece.markdown)
        else:
            strips = rendered(piece.piece.markdown)
        piece.show(width, piece.keep(strips), alone=continues and not joinable)
        self.renders += 1
        if self._hands_on(index) and self._pieces[index + 1].width == width:
            self._pieces[index + 1].alone = True  # its first row was this piece's last
        return len(piece.strips) != before

    def settle_one(self) -> bool:
        """Render the first piece still estimated at the laid-out width.

        Returns:
            True if more pieces wait (call again later), False when all are settled.
        """
        self._settle_posted = False
        width = self._layout_width
        if width < 0 or not self.is_attached:
            return False
        shown = self._pieces[: self._count()]
        index = next((i for i, p in enumerate(shown) if p.width != width or p.alone), None)
        if index is None:
            return False
        if self._render_piece(index, width):
            self.refresh(layout=True)
        more = not self.settled
        self._settle_posted = more
        return more

    def _row_starts(self, width: int) -> list[int]:
        starts: list[int] = []
        row = 0
        gap = 0
        for index, piece in enumerate(self._pieces[: self._count()]):
            starts.append(row)
            # A blank row between two pieces; none inside a cut code block or paragraph.
            gap = 0 if piece.piece.joined_below or piece.piece.flows_on else 1
            row += self._rows(index, width) + gap
        starts.append(row - gap)
        self._starts = starts
        return starts

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        """Rows of all pieces at ``width`` (estimates for those not rendered yet)."""
        self._layout_width = width
        self._laid_out = self._count()
        height = self._row_starts(width)[-1]
        self._request_settle()
        return height

    def render_lines(self, crop: Region) -> list[Strip]:
        """The rows of ``crop`` (the widget's style looked up once for all of them)."""
        return self._pass_style.during(lambda: super(SealedMarkdown, self).render_lines(crop))

    def render_line(self, y: int) -> Strip:
        """Row ``y``: renders the piece it falls in first, if that piece was only estimated."""
        width = self.content_size.width
        starts = self._starts
        index = bisect.bisect_right(starts, y) - 1
        if not self._pieces or index < 0 or index >= self._count():
            return Strip.blank(width, self._pass_style.style)
        piece = self._pieces[index]
        if (piece.width != width or piece.alone) and self._render_piece(index, width):
            starts = self._row_starts(width)  # the rows below moved: keep this frame consistent
            self.refresh(layout=True)
        row = y - starts[index]
        if row >= self._rows(index, width):
            return Strip.blank(width, self._pass_style.style)
        return piece.strips[row].apply_style(self._pass_style.style)
