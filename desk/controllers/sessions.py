"""Saved sessions: which one is shown, the sidebar (Ctrl+B), resuming, switching, renaming,
deleting, and the session notices.

At start the desk creates a new session, or resumes one (``desk --resume [ID]``). Each shown
session gets a :class:`~desk.widgets.session_view.ShownSession` of its own: switching mounts a new
one and removes the old, so events of the old session have nowhere to land any more. A turn
of the session that runs meanwhile is drawn in the new view as it stood: the bridge kept its
events (:mod:`desk.live_turns`) and hands them to the view as it points its deliveries at it;
the view handles them, then the events that follow, once the saved transcript (without that
turn's messages: its events draw them) is rendered. So is a child agent of the session that
outlived its turn and still runs (the saved transcript leaves its card out). A resumed
session's transcript is rendered from ``session.resume`` (:mod:`desk.saved_blocks`): its last
:attr:`desk.startup.Startup.recent_messages` messages, under an "N earlier messages · show
more" line that renders the next batch above when asked. The prompts it left not sent (still
queued when desk last closed) are offered again above the prompt box, not also rendered as
turns of its transcript.

``session.evicted`` and ``session.store_error`` become a line in the transcript when they are
about the session on screen (its view receives them), and a toast otherwise (the app does); so
does a store that could not be opened. ``session.store_waiting`` of any session puts
"saving is waiting for the database" in the status bar until its writes are all saved.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING

from textual.widget import Widget

from agent.usage import TokenUsage
from contract.errors import GatewayError
from contract.events import SessionEvicted, StoreFailed, StoreWaiting
from contract.results import TranscriptEntry
from desk.controllers.gauge import ContextGauge
from desk.controllers.ports import FocusPrompt, Notify
from desk.controllers.queue import QueueController, offered_apart
from desk.controllers.turns import TurnsController
from desk.live_turns import LiveSession
from desk.receipts import ReceiptFormatter
from desk.screens.confirm_delete import ConfirmDelete
from desk.startup import Startup
from desk.widgets.earlier_messages import EarlierMessages
from desk.widgets.sessions_sidebar import SessionsSidebar
from desk.widgets.status_bar import StatusBar

if TYPE_CHECKING:
    from contract.ports import DeskGateway
    from desk.controllers.view import ShownSession

WAITING = "saving is waiting for the database"
"""The status bar's words while a session's writes wait (``session.store_waiting``)."""

Switch = Callable[[str, Callable[[], object]], LiveSession | None]
"""Runs a callback that shows a new view of a session, with no event of the gateway delivered
meanwhile, and returns what that session's running turn, and its child agents that outlived
their turn, showed so far (the bridge's :meth:`~desk.bridge.GatewayBridge.switch`)."""

Later = Callable[[Callable[[], object]], object]
"""Runs a callback once the UI is free (``App.call_later``, ``App.call_after_refresh``)."""

AskDelete = Callable[[ConfirmDelete, Callable[[bool | None], None]], object]
"""Shows the confirmation and calls back with the answer (``App.push_screen``)."""


def without_children(
    entries: list[TranscriptEntry], agents: frozenset[str]
) -> list[TranscriptEntry]:
    """``entries`` whose saved child agents leave out ``agents`` (drawn live instead)."""
    return [
        replace(e, children=tuple(c for c in e.children if c.turn_id not in agents))
        if any(c.turn_id in agents for c in e.children)
        else e
        for e in entries
    ]


class SessionsController:
    """Saved sessions, and which one the desk shows.

    Args:
        gateway: the gateway (``session.*``).
        startup: resume or new session, the start-up notice, the sidebar's clock.
        sidebar: the sessions sidebar.
        status: the status bar (the shown session's model).
        gauge: the context gauge (an estimate of a shown transcript).
        turns: shows a session's running turn as running.
        queue: shows a session's queued prompts (and offers again those a resumed session had
            left unsent).
        format_receipt: how stop receipts of saved turns read.
        switch: points the bridge's deliveries at a new view, and says what the session's
            running turn showed so far (the bridge knows).
        mount_view: makes and mounts the view of a session (the app does; it is the parent).
        notify: shows a toast.
        focus_prompt: gives the focus back to the prompt box.
        ask_delete: shows the delete confirmation.
        later: runs a callback once the UI is free.
        after_refresh: runs a callback after the next screen refresh.
        switched: told once the view shown before a switch is gone (what other controllers
            kept of its widgets, the child agents' cards, goes with it).
    """

    def __init__(
        self,
        gateway: DeskGateway,
        *,
        startup: Startup,
        sidebar: SessionsSidebar,
        status: StatusBar,
        gauge: ContextGauge,
        turns: TurnsController,
        queue: QueueController,
        format_receipt: ReceiptFormatter,
        switch: Switch,
        mount_view: Callable[[str], Awaitable[ShownSession]],
        notify: Notify,
        focus_prompt: FocusPrompt,
        ask_delete: AskDelete,
        later: Later,
        after_refresh: Later,
        switched: Callable[[], None] = lambda: None,
    ) -> None:
        self._gateway = gateway
        self._startup = startup
        self._sidebar = sidebar
        self._status = status
        self._waiting: set[str] = set()  # sessions whose writes wait for the database
        self._gauge = gauge
        self._turns = turns
        self._queue = queue
        self._format_receipt = format_receipt
        self._switch = switch
        self._mount_view = mount_view
        self._notify = notify
        self._focus_prompt = focus_prompt
        self._ask_delete = ask_delete
        self._later = later
        self._after_refresh = after_refresh
        self._switched = switched
        self.view: ShownSession | None = None
        """The view of the session shown (None until the app is mounted)."""
        self.resume_rendered_at: float | None = None
        """``time.perf_counter()`` once a resumed transcript was first painted (for benches)."""

    # -- start -----------------------------------------------------------------------------------

    def started(self, notice: str, saved: bool) -> None:
        """What a gateway built after the first frame says of itself (:mod:`desk.late_gateway`):
        ``notice`` is shown at start too, and ``saved`` is False when sessions are not saved.
        Call it before :meth:`start`."""
        joined = " · ".join(line for line in (self._startup.notice, notice) if line)
        self._startup = replace(self._startup, notice=joined, saved=self._startup.saved and saved)

    async def start(self) -> ShownSession:
        """Show the first session: resumed (``--resume``) or new. Called on mount.

        Returns:
            its view. Start-up notices and the resumed transcript are rendered right after.
        """
        startup = self._startup
        notes: list[tuple[str, bool]] = []
        if startup.notice:
            notes.append((f"⚠ {startup.notice}", True))
        resumed = None
        if startup.resume:
            try:
                resumed = self._gateway.session_resume(startup.resume_id)
            except GatewayError as exc:
                notes.append((f"⚠ cannot resume: {exc.message}; this is a new session", False))
        session_id = resumed.session_id if resumed else self._gateway.session_create()
        model = self._named_model(session_id, resumed.model, notes) if resumed else ""
        view, _live = await self._replace_view(session_id)
        await view.release()  # nothing ran in it yet
        for text, error in notes:
            self._later(partial(view.add_note, text, error=error))
        if resumed is not None:
            view.usage = resumed.usage
            shown = partial(self._show_resumed, view, resumed.transcript, model)
            self._later(shown)
        return view

    def _named_model(self, session_id: str, saved: str, notes: list[tuple[str, bool]]) -> str:
        """The resumed session's model: the one ``--model`` named, when it names another and
        the gateway takes it (else a note says why not), or the one it saved."""
        named = self._startup.model
        set_model = getattr(self._gateway, "session_set_model", None)
        if not named or named == saved or set_model is None:
            return saved
        try:
            set_model(session_id, named)
        except GatewayError as exc:
            notes.append((f"⚠ --model {named}: {exc.message}", True))
            return saved
        return named

    async def _show_resumed(
        self, view: ShownSession, entries: list[TranscriptEntry], model: str
    ) -> None:
        self._reset_status_bar(view, model, view.usage)
        await self._render(view, offered_apart(entries))
        await self._queue.load(view)
        await self._queue.offer_unsent(view, entries)
        self._after_refresh(self._mark_rendered)

    def _mark_rendered(self) -> None:
        self.resume_rendered_at = time.perf_counter()

    # -- showing a session -----------------------------------------------------------------------

    async def _replace_view(self, session_id: str) -> tuple[ShownSession, LiveSession | None]:
        """Mount a view of ``session_id`` in place of the one shown; it holds the events so far
        of the session's running turn and background child agents (returned too) and those
        that follow, until released."""
        view = await self._mount_view(session_id)
        old = self.view

        def point() -> None:
            self.view = view  # from now on the bridge posts to the new view

        live = self._switch(session_id, point)
        view.hold(live)  # before anything awaits: no message of the view is handled before
        if old is not None:
            await old.remove()
            self._switched()
        return view, live

    async def show(
        self,
        session_id: str,
        transcript: list[TranscriptEntry],
        model: str = "",
        usage: TokenUsage | None = None,
    ) -> None:
        """Switch the desk to ``session_id`` and render ``transcript`` (may be empty).

        A turn of that session that runs now shows as it stood, running (Esc and Stop reach
        it): its prompt, its reply so far, its tool cards (an approval waiting among them,
        answerable), its child agents and its state and elapsed time in the status bar; it goes
        on below the saved transcript. So does a child agent that outlived its turn and still
        runs (in the background): its card live (Stop stops it), under its ``delegate`` call,
        counted in the status bar. The status bar shows the
        session's ``model`` ("" for the connection's), a context estimate of the transcript and
        the session's ``usage`` (its requests summed, None for none yet).
        """
        view, live = await self._replace_view(session_id)
        try:
            view.usage = usage
            self._reset_status_bar(view, model, usage)
            self._turns.set_running(view, None)
            if live is not None and live.turn is not None:  # its events draw it, prompt first
                turn = live.turn
                self._turns.set_running(view, turn.turn_id, turn.started_at)
                transcript = [e for e in transcript if e.turn_id != turn.turn_id]
            if live is not None and live.agents:  # their events draw them, live
                transcript = without_children(transcript, live.agents)
            offered = not self._turns_running(view)
            await self._render(view, offered_apart(transcript) if offered else transcript)
            await self._queue.load(view)
            if offered:
                await self._queue.offer_unsent(view, transcript)
        finally:
            await view.release()  # the running turn's events, then the ones that came since
        self._focus_prompt()
        await self.refresh()

    @staticmethod
    def _turns_running(view: ShownSession) -> bool:
        return view.running_turn is not None or len(view.queue) > 0

    def _reset_status_bar(self, view: ShownSession, model: str, usage: TokenUsage | None) -> None:
        self._status.model = model
        self._gauge.reset(view.session_id, usage)

    async def _render(self, view: ShownSession, entries: list[TranscriptEntry]) -> None:
        from desk.saved_blocks import saved_blocks, split_recent

        start = split_recent(entries, self._startup.recent_messages)
        view.earlier = entries[:start]
        blocks: list[Widget] = []
        if start:
            blocks.append(EarlierMessages(start))
        blocks.extend(saved_blocks(entries[start:], start, self._format_receipt))
        if blocks:
            await view.transcript.mount_all(blocks)
        view.transcript.scroll_end(animate=False)

    async def show_earlier(self, view: ShownSession) -> None:
        """ "show more": render the previous batch above the blocks shown."""
        from desk.saved_blocks import saved_blocks, split_recent

        transcript = view.transcript
        line = next(transcript.query_children(EarlierMessages).results(), None)
        if line is None or not view.earlier:
            return
        entries = view.earlier
        start = split_recent(entries, self._startup.recent_messages)
        view.earlier = entries[:start]
        blocks = saved_blocks(entries[start:], start, self._format_receipt)
        if blocks:
            await transcript.mount_all(blocks, after=line)
        if start:
            line.count = start
            line.update(EarlierMessages.label(start))
        else:
            await line.remove()

    async def new_session(self) -> None:
        """Start an empty session and show it (the one shown stays saved)."""
        try:
            session_id = self._gateway.session_create()
        except GatewayError as exc:
            self._notify(exc.message, title="No new session", severity="error")
            return
        await self.show_new(session_id)

    async def show_new(self, session_id: str) -> None:
        """Show ``session_id``, a session just created (empty), with the model it uses: the
        one the gateway gives new sessions (the server's, when no model was named at start;
        the status bar said "no model yet" while it showed ``""``)."""
        try:
            model = self._gateway.server.status().model
        except GatewayError:  # a gateway in a child process that has gone
            model = ""
        await self.show(session_id, [], model)

    # -- the sidebar -----------------------------------------------------------------------------

    def toggle_sidebar(self) -> None:
        """Ctrl+B: open the sidebar (focused) or close it."""
        if self._sidebar.is_open:
            self._sidebar.close()
            self._focus_prompt()
        else:
            self.open_sidebar()

    def open_sidebar(self) -> None:
        """Open the sidebar, focus its list and (re)read the sessions."""
        self._sidebar.open(self.view.session_id if self.view is not None else None)
        self._later(self.refresh)

    async def refresh(self) -> None:
        """Re-read ``session.list`` into the sidebar, if it is open."""
        sidebar = self._sidebar
        if not sidebar.is_attached or not sidebar.is_open:
            return
        try:
            sessions = self._gateway.session_list()
            error = ""
        except GatewayError as exc:
            sessions, error = [], f"cannot list the sessions: {exc.message}"
        now = self._startup.wall_clock()
        current = self.view.session_id if self.view is not None else None
        await sidebar.show(sessions, current=current, now=now, error=error)

    async def open_requested(self, session_id: str) -> None:
        """Enter on a session: resume it and show its transcript."""
        sidebar = self._sidebar
        if self.view is not None and session_id == self.view.session_id:
            sidebar.close()
            self._focus_prompt()
            return
        try:
            resumed = self._gateway.session_resume(session_id)
        except GatewayError as exc:
            self._notify(exc.message, title="Cannot open the session", severity="error")
            return
        sidebar.close()
        await self.show(resumed.session_id, resumed.transcript, resumed.model, resumed.usage)

    async def rename_requested(self, session_id: str, title: str) -> None:
        """A new title typed in the sidebar."""
        try:
            self._gateway.session_rename(session_id, title)
        except GatewayError as exc:
            self._notify(exc.message, title="Not renamed", severity="error")
        await self.refresh()

    def delete_requested(self, session_id: str, title: str) -> None:
        """``d``: confirm, then delete."""
        item = self._sidebar.selected()
        running = item is not None and item.info.running

        def answered(delete: bool | None) -> None:
            if delete:
                self._later(partial(self.delete, session_id))

        self._ask_delete(ConfirmDelete(title, running=running), answered)

    async def delete(self, session_id: str) -> None:
        """Delete a session for good; deleting the one on screen starts a new one."""
        try:
            # Off the UI thread: deleting a session whose turn runs waits for the turn to end.
            await asyncio.to_thread(self._gateway.session_delete, session_id)
        except GatewayError as exc:
            self._notify(exc.message, title="Not deleted", severity="error")
            return
        # The list keeps the focus, unless keys typed meanwhile took it to the prompt box.
        on_list = self._sidebar.is_open and self._sidebar.list_view.has_focus
        if self.view is not None and session_id == self.view.session_id:
            try:
                fresh = self._gateway.session_create()
            except GatewayError as exc:
                self._notify(exc.message, title="No new session", severity="error")
                return
            await self.show_new(fresh)
        else:
            await self.refresh()
        if on_list and self._sidebar.is_open:
            self._sidebar.list_view.focus()

    # -- notices ---------------------------------------------------------------------------------

    async def evicted(self, view: ShownSession, payload: SessionEvicted) -> None:
        """``session.evicted`` of the session shown: a line in its transcript."""
        self._turns.set_running(view, None)
        await view.add_note(
            f"■ this session was closed by the gateway ({payload.reason}); it stays saved: "
            "open it again from the sessions sidebar (Ctrl+B)",
            error=True,
        )
        await self.refresh()

    async def background_evicted(self, payload: SessionEvicted) -> None:
        """``session.evicted`` of another session: a toast."""
        self._notify(f"a background session was closed: {payload.reason}", title="Session closed")
        await self.refresh()

    async def store_failed(self, view: ShownSession, payload: StoreFailed) -> None:
        """``session.store_error`` of the session shown: one line (naming the file that holds
        what was not saved); it goes on in memory."""
        self._waiting.discard(view.session_id)
        self._status.saving = WAITING if self._waiting else ""
        await view.add_note(f"⚠ cannot {payload.action}: {payload.message}", error=True)

    def background_store_failed(self, session_id: str, payload: StoreFailed) -> None:
        """``session.store_error`` of another session: a toast."""
        self._waiting.discard(session_id)
        self._status.saving = WAITING if self._waiting else ""
        text = f"⚠ cannot {payload.action}: {payload.message}"
        self._notify(text, title="Session not saved", severity="warning")

    def resume_hint(self) -> str:
        """How to open the session on screen again, for the terminal after the desk exits:
        ``to resume this session: desk --resume <id>``; "" when it has no turn, or sessions are
        not saved (no database)."""
        from desk.widgets.user_prompt import UserPrompt

        view = self.view
        if view is None or not self._startup.saved:
            return ""
        if not view.earlier and not view.transcript.query(UserPrompt):
            return ""
        return f"to resume this session: {self._startup.resume_command(view.session_id)}"

    def resume_hint_from_any_thread(self) -> str:
        """:meth:`resume_hint`, read off the UI thread (a quit leaving at once): the UI thread may
        change the transcript meanwhile; when reading it fails, the hint is given whenever the
        session ran a turn here or was resumed."""
        try:
            return self.resume_hint()
        except Exception:  # the DOM changed under the read
            view = self.view
            if view is None or not self._startup.saved:
                return ""
            return f"to resume this session: {self._startup.resume_command(view.session_id)}"

    def store_waiting(self, session_id: str, payload: StoreWaiting) -> None:
        """``session.store_waiting`` of any session: the status bar says saving waits for the
        database while any session's writes wait (the database is one for all of them)."""
        if payload.waiting:
            self._waiting.add(session_id)
        else:
            self._waiting.discard(session_id)
        self._status.saving = WAITING if self._waiting else ""
