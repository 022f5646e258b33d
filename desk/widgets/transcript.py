"""The transcript: an anchored scroll holding a banner, then prompt and reply blocks in order."""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque

from textual.containers import VerticalScroll
from textual.geometry import Size
from textual.message import Message
from textual.widget import AwaitMount, Widget

from desk.lexers import lexers
from desk.widgets._css import css_beside
from desk.widgets._one_layout import one_layout_virtual_size
from desk.widgets.assistant_reply import AssistantReply
from desk.widgets.markdown_chunk import MarkdownChunk
from desk.widgets.sealed_markdown import SealedMarkdown
from desk.widgets.user_prompt import UserPrompt

LEXER_JOIN_S = 0.5
"""Seconds a transcript taken down waits for a lexer being made (one takes 0.1-0.3 s)."""


class Transcript(VerticalScroll):
    """Prompt and reply blocks, newest at the bottom; stays scrolled to the end while anchored.

    It anchors itself as soon as its content overflows; scrolling up releases the anchor and
    scrolling back to the end restores it (Textual's anchor rules). While it does not follow
    the newest content it says so with :class:`Transcript.Following` (the view shows a "new
    output below" marker); :meth:`follow` (a prompt sent, End) goes back to the end and
    follows again.

    A prompt shown as it is sent, before its turn's start is drawn, is *pending*
    (:meth:`add_prompt` with ``pending``): the gateway runs it after every turn whose start
    is drawn later, so whatever else is added at the end goes above it (:meth:`mount`) until
    its own start is drawn (:meth:`started`). In a fast burst the gateway ran and finished a
    queued prompt before the next Enter, whose prompt was shown at once: drawing the queued
    prompt's start later put it below that one (K1 K2 K3 K5 K6 K4 K7 K8).

    Blocks are found by turn id through dictionaries, not DOM queries, so a long transcript
    costs nothing per streamed delta. Reply chunks whose height is still an estimate are
    settled here one at a time, yielding between two, so a long reply that finished streaming
    (or a resize) never holds the screen still; they start :attr:`SETTLE_AFTER_S` after the
    reply ended.
    """

    virtual_size = one_layout_virtual_size()  # see desk.widgets._one_layout

    DEFAULT_CSS = css_beside(__file__)

    class Following(Message):
        """The transcript started or stopped following the newest content.

        Args:
            following: True when it shows the end and stays there as content is added.
            new_below: while not following, True once content was added below what is shown.
        """

        def __init__(self, following: bool, new_below: bool) -> None:
            super().__init__()
            self.following = following
            """True when it follows the newest content."""
            self.new_below = new_below
            """Content was added below since it stopped following."""

    class LexerReady(Message):
        """A code lexer became ready (posted from the thread that made it).

        Args:
            language: the fence language whose blocks were drawn plain.
        """

        def __init__(self, language: str) -> None:
            super().__init__()
            self.language = language
            """The fence language."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._said: tuple[bool, bool] = (True, False)  # (following, new_below) last posted
        self._new_below = False
        self._prompts: dict[str, UserPrompt] = {}
        self._replies: dict[str, AssistantReply] = {}
        self._pending: list[UserPrompt] = []  # shown as sent, their turn's start not drawn
        self._unsettled: deque[SealedMarkdown] = deque()
        self._settling = False
        self.can_focus = False

    def on_mount(self) -> None:
        self._stop_listening = lexers().on_ready(self._lexer_ready)

    def _lexer_ready(self, language: str) -> None:
        with contextlib.suppress(RuntimeError):  # the app's loop has closed already
            self.post_message(self.LexerReady(language))

    def on_unmount(self) -> None:
        self._stop_listening()
        lexers().join(LEXER_JOIN_S)  # no thread of desk's left running as the app ends

    def on_transcript_lexer_ready(self, message: LexerReady) -> None:
        """Draw again, in colour, the code blocks of the language whose lexer is ready."""
        message.stop()
        for sealed in self.query(SealedMarkdown):
            sealed.redraw_code(message.language)
        for chunk in self.query(MarkdownChunk):
            chunk.redraw_code(message.language)

    SETTLE_AFTER_S = 1.0
    """Seconds between a reply's end (or a resize) and the first piece settled. The moments
    right after a stop belong to the frame saying "idle", to the next prompt and to the model
    server sharing the cores: rendering a long reply whole then kept a core a fifth busy for
    half a second on a loaded machine, for a scrollbar that is exact a second later instead."""

    def on_sealed_markdown_unsettled(self, message: SealedMarkdown.Unsettled) -> None:
        message.stop()
        self._unsettled.append(message.widget)
        if not self._settling:
            self._settling = True
            self.set_timer(self.SETTLE_AFTER_S, self._start_settling)

    def _start_settling(self) -> None:
        # The function, not a coroutine: one made while the app quits would never be awaited.
        self.run_worker(self._settle_chunks, group="settle")  # type: ignore[arg-type]

    async def _settle_chunks(self) -> None:
        try:
            while self._unsettled:
                widget = self._unsettled.popleft()
                if widget.settle_one():
                    self._unsettled.append(widget)  # round robin: one piece per widget per pass
                await asyncio.sleep(0)  # let input and the next frame in between two renders
        finally:
            self._settling = False

    @property
    def settling(self) -> bool:
        """True while reply chunks wait to replace their estimated height by the real one."""
        return self._settling

    def watch_virtual_size(self, old: Size, size: Size) -> None:
        # Anchor once the content overflows: anchoring earlier would bottom-align a short
        # transcript (Textual scrolls an anchored view to its end even when it fits).
        if not self.is_anchored and size.height > self.scrollable_content_region.height:
            self.anchor()
        if size.height > old.height and not self.following:
            self._new_below = True
        self._say_following()

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)  # Textual's: the scrollbar, the anchor
        self._say_following()

    @property
    def following(self) -> bool:
        """True while the newest content stays in view (the person did not scroll away)."""
        return not (self._anchored and self._anchor_released)

    def follow(self) -> None:
        """Go to the end and follow the newest content again (a prompt sent, End)."""
        if self.virtual_size.height > self.scrollable_content_region.height:
            self.anchor()  # scrolls to the end, at once
        self.scroll_end(animate=False, immediate=True)  # and clears a released anchor
        self._say_following()

    def _say_following(self) -> None:
        following = self.following
        if following:
            self._new_below = False
        said = (following, self._new_below)
        if said != self._said:
            self._said = said
            self.post_message(self.Following(*said))

    def page(self, direction: int) -> None:
        """Scroll a page up (``direction`` < 0) or down, whatever has the focus."""
        if direction < 0:
            self.release_anchor()  # stay where the person scrolled while text streams
            self.scroll_page_up(animate=False)
        else:
            self.scroll_page_down(animate=False)  # at the end the anchor comes back
        self._say_following()

    def prompt(self, turn_id: str) -> UserPrompt | None:
        """The prompt block of a turn, if shown."""
        return self._prompts.get(turn_id)

    def forget_prompt(self, turn_id: str) -> None:
        """Stop finding the prompt block of ``turn_id`` (it is being removed)."""
        block = self._prompts.pop(turn_id, None)
        if block is not None and block in self._pending:
            self._pending.remove(block)

    def reply(self, turn_id: str) -> AssistantReply | None:
        """The reply block of a turn, if shown."""
        return self._replies.get(turn_id)

    @property
    def reply_turn_ids(self) -> list[str]:
        """Turn ids of the replies shown, in the order they were added."""
        return list(self._replies)

    async def add_prompt(self, turn_id: str, text: str, *, pending: bool = False) -> UserPrompt:
        """Show a prompt (or return the one already shown for this turn).

        Args:
            turn_id: its turn.
            text: the prompt.
            pending: it is shown as it is sent, before its turn's start is drawn: it goes at
                the very end, and stays below what is added until :meth:`started` (else it
                goes at the end of what is drawn, above the pending prompts).
        """
        block = self._prompts.get(turn_id)
        if block is None:
            block = UserPrompt(turn_id, text)
            self._prompts[turn_id] = block
            if pending:
                # Pending before the mount is awaited: the block is a child already, and a
                # turn's start drawn meanwhile (the view's events are handled while the screen
                # waits here) goes above it, not below (one⏎ Esc two⏎ Esc three⏎ showed
                # one three two).
                mounted = super().mount(block)
                self._pending.append(block)
                await mounted
            else:
                await self.mount(block)
        return block

    def started(self, turn_id: str) -> None:
        """The start of ``turn_id`` is drawn (or its end, or its drop): a pending prompt of it
        takes its place in the gateway's order, above the prompts still pending."""
        block = self._prompts.get(turn_id)
        if block is None or block not in self._pending:
            return
        self._pending.remove(block)
        first = self._first_pending()
        if first is not None and block.is_attached and self._above(first, block):
            self.move_child(block, before=first)

    def _first_pending(self) -> UserPrompt | None:
        """The topmost pending prompt on screen, if any."""
        attached = [b for b in self._pending if b.is_attached]
        if not attached:
            return None
        return min(attached, key=self.children.index)

    def _above(self, upper: Widget, lower: Widget) -> bool:
        """True when ``upper`` is shown above ``lower`` (both children of the transcript)."""
        return self.children.index(upper) < self.children.index(lower)

    def mount(
        self,
        *widgets: Widget,
        before: int | str | Widget | None = None,
        after: int | str | Widget | None = None,
    ) -> AwaitMount:
        """Textual's ``mount``; what goes at the end goes above the pending prompts (see the
        class), in the gateway's order."""
        if before is None and after is None:
            before = self._first_pending()
        return super().mount(*widgets, before=before, after=after)

    async def add_reply(self, turn_id: str) -> AssistantReply:
        """Show an empty reply right after its prompt (or return the one already shown)."""
        block = self._replies.get(turn_id)
        if block is None:
            block = AssistantReply(turn_id)
            self._replies[turn_id] = block
            prompt = self._prompts.get(turn_id)
            if prompt is not None and prompt.is_attached:
                await self.mount(block, after=prompt)
            else:
                await self.mount(block)
        return block

    def set_reply(self, turn_id: str, block: AssistantReply) -> None:
        """Make ``block`` (already mounted) the one the turn's reply streams into from now on.

        Used after a tool call: text the model writes after it goes below the tool card.
        """
        self._replies[turn_id] = block

    async def clear(self) -> None:
        """Remove every block but the banner (the desk switches to another session)."""
        self._prompts.clear()
        self._replies.clear()
        self._pending.clear()
        await self.query_children().exclude(".banner").remove()
