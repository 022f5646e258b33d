"""Saved sessions: the sidebar (Ctrl+B), resuming, switching, renaming, deleting, and notices.

At start the desk creates a new session, or resumes one (``desk --resume [ID]``). Showing a
resumed session renders its transcript from ``session.resume``: user prompts, replies (a reply
saved as partial is marked as stopped) and tool calls in brief. A long transcript renders only
its last :attr:`desk.startup.Startup.recent_messages` messages, under an "N earlier messages ·
show more" line that renders the next batch above when asked.

``session.evicted`` and ``session.store_error`` become a line in the transcript when they are
about the session on screen, and a toast otherwise; so does a store that could not be opened.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any, ClassVar

from textual import on
from textual.binding import Binding, BindingType
from textual.widget import Widget

from agent.tokens import tokens_in_chars
from desk.activity_messages import SessionStoreFailed, SessionWasEvicted
from desk.features.base import DeskBase
from desk.messages import TurnCompleted, TurnStarted
from desk.receipts import format_stop_receipt
from desk.screens.confirm_delete import ConfirmDelete
from desk.widgets.earlier_messages import EarlierMessages
from desk.widgets.saved_reply import SavedReply, note_line
from desk.widgets.saved_summary import SavedSummary, is_summary_text
from desk.widgets.saved_tool_calls import SavedToolCalls
from desk.widgets.sessions_sidebar import SessionsSidebar
from desk.widgets.status_bar import StatusBar
from desk.widgets.user_prompt import UserPrompt
from tui_gateway.events import StopReceipt
from tui_gateway.types import GatewayError, TranscriptEntry


def split_recent(entries: list[TranscriptEntry], count: int) -> int:
    """Where the last ``count`` messages begin, moved back so no tool result loses its call.

    Returns:
        the index of the first entry to render now (0 renders everything).
    """
    start = max(0, len(entries) - count)
    while 0 < start < len(entries) and entries[start].role == "tool":
        start -= 1
    return start


def saved_blocks(
    entries: list[TranscriptEntry],
    offset: int,
    format_receipt: Callable[[StopReceipt], str] = format_stop_receipt,
) -> list[Widget]:
    """The transcript blocks for saved messages.

    Args:
        entries: consecutive messages of a session, oldest first (system messages are skipped;
            ``tool`` results are shown with the assistant message that called them).
        offset: the index of ``entries[0]`` in the whole transcript (keeps block ids unique).
        format_receipt: how the desk writes a stop receipt (so a resumed stop reads as it did).

    Returns:
        the widgets, in order.
    """
    blocks: list[Widget] = []
    index = 0
    while index < len(entries):
        entry = entries[index]
        # Shown under the turn's last block, as the live stop receipt or error line was.
        note = note_line(entry.note, entry.stop, format_receipt)
        if entry.role == "user" and is_summary_text(entry.content):
            blocks.append(SavedSummary(entry.content))
        elif entry.role == "user":
            blocks.append(UserPrompt(f"saved{offset + index}", entry.content))
        elif entry.role == "assistant":
            if entry.content.strip() or (entry.partial and not entry.tool_names):
                blocks.append(SavedReply(entry.content, partial=entry.partial, note=note))
                note = ""
            if entry.tool_names:
                results: list[str] = []
                while (
                    index + 1 < len(entries)
                    and entries[index + 1].role == "tool"
                    and len(results) < len(entry.tool_names)
                ):
                    index += 1
                    results.append(entries[index].content)
                    result = entries[index]
                    note = note_line(result.note, result.stop, format_receipt) or note
                blocks.append(SavedToolCalls(entry.tool_names, results))
        elif entry.role == "tool":  # a result whose call is not shown: show it briefly
            blocks.append(SavedToolCalls(["tool"], [entry.content]))
        if note:  # a turn that ended without a reply to put it under
            blocks.append(SavedReply("", note=note))
        index += 1
    return blocks


def context_estimate(entries: list[TranscriptEntry]) -> int:
    """Tokens a saved transcript takes in the context window, estimated (4 characters each)."""
    return sum(tokens_in_chars(len(entry.content)) for entry in entries)


class SessionsFeature(DeskBase):
    """Saved sessions (a part of :class:`desk.app.DeskApp`)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+b", "toggle_sessions", "Sessions", priority=True),
    ]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._earlier: list[TranscriptEntry] = []
        self._turns_running: dict[str, str] = {}  # session id -> running turn, every session
        self.resume_rendered_at: float | None = None
        """``time.perf_counter()`` once a resumed transcript was first painted (for benches)."""

    @property
    def sessions_sidebar(self) -> SessionsSidebar:
        """The sessions sidebar."""
        return self.query_one("#sessions", SessionsSidebar)

    # -- start -----------------------------------------------------------------------------------

    def open_first_session(self) -> str:
        """The session to show at start: resumed (``--resume``) or new. Called on mount.

        Returns:
            its id. Rendering a resumed transcript and start-up notices follows right after.
        """
        startup = self.startup
        if startup.notice:
            self.call_later(self.add_note, f"⚠ {startup.notice}", error=True)
        if startup.resume:
            try:
                resumed = self.gateway.session_resume(startup.resume_id)
            except GatewayError as exc:
                self.call_later(
                    self.add_note, f"⚠ cannot resume: {exc.message}; this is a new session"
                )
            else:
                self.call_later(
                    self._show_resumed, resumed.session_id, resumed.transcript, resumed.model
                )
                return resumed.session_id
        return self.gateway.session_create()

    async def _show_resumed(
        self, session_id: str, entries: list[TranscriptEntry], model: str = ""
    ) -> None:
        self._reset_status_bar(entries, model)
        await self._render_transcript(entries)
        self.call_after_refresh(self._mark_rendered)

    def _mark_rendered(self) -> None:
        self.resume_rendered_at = time.perf_counter()

    # -- showing a session -----------------------------------------------------------------------

    @on(TurnStarted)
    def _note_turn_started(self, message: TurnStarted) -> None:
        self._turns_running[message.session_id] = message.payload.turn_id

    @on(TurnCompleted)
    def _note_turn_ended(self, message: TurnCompleted) -> None:
        if self._turns_running.get(message.session_id) == message.payload.turn_id:
            del self._turns_running[message.session_id]

    async def show_session(
        self, session_id: str, transcript: list[TranscriptEntry], model: str = ""
    ) -> None:
        """Switch the desk to ``session_id`` and render ``transcript`` (may be empty).

        A turn of that session that runs now shows as running (Esc and Stop reach it); its
        reply goes on streaming below the saved transcript. The status bar shows the
        session's ``model`` ("" for the connection's) and a context estimate of the transcript.
        """
        self._session_id = session_id
        self._reset_status_bar(transcript, model)
        self._set_running(None)
        self._set_running(self._turns_running.get(session_id))
        self._queued.clear()
        self._set_queued()
        await self.transcript.clear()
        await self._render_transcript(transcript)
        self.focus_prompt()
        await self.refresh_sessions()

    def _reset_status_bar(self, entries: list[TranscriptEntry], model: str) -> None:
        status = next(self.query("#status").results(StatusBar), None)
        if status is not None:
            status.model = model
            status.context_used = context_estimate(entries)

    async def _render_transcript(self, entries: list[TranscriptEntry]) -> None:
        start = split_recent(entries, self.startup.recent_messages)
        self._earlier = entries[:start]
        blocks: list[Widget] = []
        if start:
            blocks.append(EarlierMessages(start))
        blocks.extend(saved_blocks(entries[start:], start, self._format_receipt))
        if blocks:
            await self.transcript.mount_all(blocks)
        self.transcript.scroll_end(animate=False)

    async def on_earlier_messages_requested(self, message: EarlierMessages.Requested) -> None:
        """ "show more": render the previous batch above the blocks shown."""
        line = next(self.transcript.query_children(EarlierMessages).results(), None)
        if line is None or not self._earlier:
            return
        entries = self._earlier
        start = split_recent(entries, self.startup.recent_messages)
        self._earlier = entries[:start]
        blocks = saved_blocks(entries[start:], start, self._format_receipt)
        if blocks:
            await self.transcript.mount_all(blocks, after=line)
        if start:
            line.count = start
            line.update(EarlierMessages.label(start))
        else:
            await line.remove()

    # -- new and resume (palette) -----------------------------------------------------------------

    async def action_new_session(self) -> None:
        """Start an empty session and show it (the one shown stays saved)."""
        try:
            session_id = self.gateway.session_create()
        except GatewayError as exc:
            self.notify(exc.message, title="No new session", severity="error")
            return
        await self.show_session(session_id, [])

    def action_resume_session(self) -> None:
        """Open the sessions sidebar to pick a session to resume."""
        self.open_sessions()

    # -- the sidebar -----------------------------------------------------------------------------

    async def action_toggle_sessions(self) -> None:
        """Ctrl+B: open the sidebar (focused) or close it."""
        sidebar = self.sessions_sidebar
        if sidebar.is_open:
            sidebar.close()
            self.focus_prompt()
        else:
            self.open_sessions()

    def open_sessions(self) -> None:
        """Open the sidebar, focus its list and (re)read the sessions."""
        self.sessions_sidebar.open()
        self.call_later(self.refresh_sessions)

    async def refresh_sessions(self) -> None:
        """Re-read ``session.list`` into the sidebar, if it is open."""
        sidebar = next(self.query("#sessions").results(SessionsSidebar), None)
        if sidebar is None or not sidebar.is_open:
            return
        try:
            sessions = self.gateway.session_list()
            error = ""
        except GatewayError as exc:
            sessions, error = [], f"cannot list the sessions: {exc.message}"
        now = self.startup.wall_clock()
        await sidebar.show(sessions, current=self._session_id, now=now, error=error)

    async def on_sessions_sidebar_open_requested(
        self, message: SessionsSidebar.OpenRequested
    ) -> None:
        """Enter on a session: resume it and show its transcript."""
        sidebar = self.sessions_sidebar
        if message.session_id == self._session_id:
            sidebar.close()
            self.focus_prompt()
            return
        try:
            resumed = self.gateway.session_resume(message.session_id)
        except GatewayError as exc:
            self.notify(exc.message, title="Cannot open the session", severity="error")
            return
        sidebar.close()
        await self.show_session(resumed.session_id, resumed.transcript, resumed.model)

    async def on_sessions_sidebar_rename_requested(
        self, message: SessionsSidebar.RenameRequested
    ) -> None:
        """A new title typed in the sidebar."""
        try:
            self.gateway.session_rename(message.session_id, message.title)
        except GatewayError as exc:
            self.notify(exc.message, title="Not renamed", severity="error")
        await self.refresh_sessions()

    def on_sessions_sidebar_delete_requested(
        self, message: SessionsSidebar.DeleteRequested
    ) -> None:
        """``d``: confirm, then delete."""
        item = self.sessions_sidebar.selected()
        running = item is not None and item.info.running
        session_id = message.session_id

        def answered(delete: bool | None) -> None:
            if delete:
                self.call_later(self.delete_session, session_id)

        self.push_screen(ConfirmDelete(message.title, running=running), answered)

    async def delete_session(self, session_id: str) -> None:
        """Delete a session for good; deleting the one on screen starts a new one."""
        try:
            # Off the UI thread: deleting a session whose turn runs waits for the turn to end.
            await asyncio.to_thread(self.gateway.session_delete, session_id)
        except GatewayError as exc:
            self.notify(exc.message, title="Not deleted", severity="error")
            return
        if session_id == self._session_id:
            try:
                fresh = self.gateway.session_create()
            except GatewayError as exc:
                self.notify(exc.message, title="No new session", severity="error")
                return
            await self.show_session(fresh, [])
        else:
            await self.refresh_sessions()
        if self.sessions_sidebar.is_open:
            self.sessions_sidebar.list_view.focus()

    # -- notices ---------------------------------------------------------------------------------

    async def on_session_was_evicted(self, message: SessionWasEvicted) -> None:
        """``session.evicted``: the session left the gateway's live set."""
        reason = message.payload.reason
        if message.session_id == self._session_id and self._ours(message.session_id):
            self._set_running(None)
            await self.add_note(
                f"■ this session was closed by the gateway ({reason}); it stays saved: "
                "open it again from the sessions sidebar (Ctrl+B)",
                error=True,
            )
        else:
            self.notify(f"a background session was closed: {reason}", title="Session closed")
        await self.refresh_sessions()

    async def on_session_store_failed(self, message: SessionStoreFailed) -> None:
        """``session.store_error``: one line; the session goes on in memory."""
        p = message.payload
        text = f"⚠ cannot {p.action}: {p.message}"
        if self._ours(message.session_id):
            await self.add_note(text, error=True)
        else:
            self.notify(text, title="Session not saved", severity="warning")
