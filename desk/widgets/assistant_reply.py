"""One assistant reply: streamed into a :class:`ReplyBody` (static chunks plus a live tail).

The reply ends with at most one line under it: the stop marker of an interrupted turn, or the
error line of a failed one.
"""

from __future__ import annotations

from typing import TypeVar

from textual.app import ComposeResult
from textual.widget import Widget
from textual.widgets import Static

from contract.text import terminal_safe
from desk.widgets._css import css_beside
from desk.widgets._one_layout import one_layout_virtual_size
from desk.widgets.reply_body import ReplyBody

_W = TypeVar("_W", bound=Widget)

REASONING_TAIL_CHARS = 400
"""How much of the latest reasoning is shown while it streams, in characters."""


def reasoning_tail(reasoning: str, limit: int = REASONING_TAIL_CHARS) -> str:
    """The end of the reasoning text, ``…``-prefixed when cut, whitespace folded."""
    text = " ".join(reasoning.split())
    return text if len(text) <= limit else "…" + text[-(limit - 1) :]


class AssistantReply(Widget):
    """A reply block.

    Args:
        turn_id: the turn this reply belongs to.
        segment: 0 for the turn's first reply block; 1, 2... for the blocks that continue the
            reply after a tool call.
    """

    virtual_size = one_layout_virtual_size()  # see desk.widgets._one_layout

    DEFAULT_CSS = css_beside(__file__)

    def __init__(self, turn_id: str, *, segment: int = 0) -> None:
        block_id = f"reply-{turn_id}" if not segment else f"reply-{turn_id}-{segment}"
        super().__init__(id=block_id, classes="-running")
        self.segment = segment
        """0 for the turn's first reply block, then 1, 2... after tool calls."""
        self.turn_id = turn_id
        """The turn this reply belongs to."""
        self.text = ""
        """The reply text shown: streamed so far, then the canonical text."""
        self.reasoning = ""
        """The reasoning text streamed, if any."""
        self.outcome: str | None = None
        """The turn's status once it ended (``completed``, ``interrupted``, ``failed``...)."""
        self.note = ""
        """The marker or error line under the reply ("" when none)."""
        self._unshown_end: tuple[str, str, str] | None = None
        """A :meth:`finish` that came before the parts were composed: (text, outcome, note)."""
        self._drawing = False  # on_mount ran: pieces are drawn as they come, not kept for it

    def compose(self) -> ComposeResult:
        yield Static("", classes="reasoning", markup=False)
        yield ReplyBody(classes="body")
        yield Static("", classes="note", markup=False)

    async def on_mount(self) -> None:
        """Draw what came while the parts were being composed (a reply registered by one event
        and finished by the next, before its mount ran). Nothing to do when the app is exiting:
        the parts are never composed then."""
        if next(self.query_children(".body").results(ReplyBody), None) is None:
            return
        self._drawing = True
        if self._unshown_end is not None:
            text, outcome, note = self._unshown_end
            self._unshown_end = None
            self.outcome = None  # so that finish draws it
            await self.finish(text, outcome, note)
        elif self.text or self.reasoning:
            text, reasoning, self.text, self.reasoning = self.text, self.reasoning, "", ""
            await self.append(text, reasoning)

    def _part(self, selector: str, kind: type[_W]) -> _W | None:
        """One of the reply's parts, or None before :meth:`on_mount` drew what came early
        (and after they are removed, while the app exits): a piece drawn into the body
        between its compose and that mount would be drawn twice."""
        if not self._drawing:
            return None
        return next(self.query_children(selector).results(kind), None)

    async def append(self, text: str, reasoning: str = "") -> None:
        """Add a streamed piece of reply and/or reasoning.

        Args:
            text: visible reply text.
            reasoning: reasoning text (shown dimmed above the reply).
        """
        if self.outcome is not None or not self.is_attached:
            return  # trails the outcome (the canonical text is shown), or the app is exiting
        if reasoning:
            self.reasoning += reasoning
            self.add_class("-reasoning")
            shown = self._part(".reasoning", Static)
            if shown is not None:
                shown.update(terminal_safe(reasoning_tail(self.reasoning)))
        if text:
            self.text += text
            # Not query_one: the parts are composed after the reply is attached, and while the
            # app exits they may be gone before the reply is (on_mount draws what came early).
            body = self._part(".body", ReplyBody)
            if body is not None:
                body.append(text)

    def absorb(self, text: str, reasoning: str = "") -> None:
        """Take a streamed piece without drawing it (its turn's completion is about to)."""
        if self.outcome is not None or not self.is_attached:
            return
        self.reasoning += reasoning
        if text:
            self.text += text
            body = self._part(".body", ReplyBody)
            if body is not None:
                body.absorb(text)

    def hold(self) -> None:
        """Keep the reply's live text as the last frame drew it until :meth:`finish` (a
        stopped turn: the frame that says "idle" does not render its last pieces)."""
        body = self._part(".body", ReplyBody)
        if body is not None:
            body.hold()

    def ended(self, outcome: str, note: str = "") -> None:
        """Note the turn's outcome (and its stop marker or error line) without drawing it: the
        app is quitting."""
        self.outcome, self.note = outcome, note

    def finishes_quickly(self, text: str, limit: int) -> bool:
        """True when :meth:`finish` with ``text`` has at most ``limit`` characters to render:
        the stream was drawn up to its last pieces and ``text`` is what was streamed (nothing
        merged away or dropped, which would draw the whole reply again)."""
        if text != self.text:
            return False
        body = self._part(".body", ReplyBody)
        return body is None or body.unsealed_chars <= limit

    async def finish(self, text: str, outcome: str, note: str = "") -> None:
        """End streaming and show the canonical reply.

        Args:
            text: the canonical reply text from ``message.complete``.
            outcome: the turn's status.
            note: the stop marker or error line to show under the reply ("" for none).
        """
        if not self.is_attached:  # the app is exiting: nothing can be mounted any more
            self.ended(outcome, note)
            return
        body = self._part(".body", ReplyBody)
        if body is None:  # not composed yet (on_mount draws it), or never will be (exiting)
            self.ended(outcome, note)
            self._unshown_end = (text, outcome, note)
            return
        if text != self.text:  # deltas were merged away or dropped: show the canonical text
            self.text = text
            body.set_text(text)
        restyle = body.end_stream(restyle=False)  # styled below, with the reply's own classes
        if self.reasoning:  # fold the reasoning away once the reply is done
            words = len(self.reasoning.split())
            self.query_one(".reasoning", Static).update(f"reasoned for {words} words")
        self.outcome = outcome
        self.note = note
        classes = (self.classes - {"-running", "-empty", "-noted"}) | {f"-{outcome}"}
        if not text:
            classes |= {"-empty"}
        if note:
            self.query_one(".note", Static).update(terminal_safe(note))
            classes |= {"-noted"}
        # One style update for the reply and everything in it (each class change on its own
        # restyled the whole reply again, in the frame that shows its last words).
        if classes != self.classes:
            self.set_classes(classes)  # updates the styles
        elif restyle:
            self.update_node_styles()
