"""One session on screen: its transcript, its state, and that session's gateway messages.

The app shows one :class:`SessionView` at a time; switching sessions mounts a new view in its
place. The bridge posts the gateway events of the view's session straight to the view (see
:mod:`desk.bridge`), so every message handled here is about this view's own session, and the
view hands each one to the controller of its concern (:mod:`desk.controllers`). Messages that
the blocks of the transcript post (an approval's answer, a child's Stop, "show more") pass
through the view on their way up, and go to their controllers the same way.

A view made when the desk switches to a session holds the gateway messages that reach it
(:meth:`SessionView.hold`) until its saved transcript is rendered, behind the events its
session's running turn (and its child agents that outlived their turn) showed so far
(:mod:`desk.live_turns`); :meth:`SessionView.release`
then handles them all, in order, as they would have been handled live, and the messages that
come after them as they come.

The view keeps what is true of its session only: the running turn (read by the terminal's
input thread for the stop keys, see :meth:`desk.app.DeskApp.stop_from_input_thread`), the
queued prompts (:class:`desk.queue_state.SessionQueue`, shown above the prompt box) and the
saved messages not rendered yet.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from typing import TYPE_CHECKING

from textual import on
from textual.app import ComposeResult
from textual.widget import Widget
from textual.widgets import Static

from agent.usage import TokenUsage
from contract.events import (
    ApprovalRequest,
    ApprovalResolved,
    ChildCompleted,
    ChildStarted,
    CompressionComplete,
    CompressionProgressed,
    ContextWindowKnown,
    MessageComplete,
    MessageDelta,
    MessageStart,
    PromptDropped,
    PromptQueued,
    PromptSteered,
    SessionEvicted,
    StoreFailed,
    StoreWaiting,
    ToolComplete,
    ToolOutput,
    ToolStart,
    TurnState,
)
from contract.results import TranscriptEntry
from contract.text import terminal_safe
from desk.messages import GatewayMessage
from desk.queue_state import SessionQueue
from desk.widgets._css import css_beside
from desk.widgets.agent_card import AgentCard
from desk.widgets.approval_prompt import ApprovalPrompt
from desk.widgets.earlier_messages import EarlierMessages
from desk.widgets.follow_marker import FollowMarker
from desk.widgets.transcript import Transcript

if TYPE_CHECKING:
    from desk.controllers import DeskControllers
    from desk.live_turns import LiveSession

DRAIN_S = 2.0
"""Longest wait for the view to handle what was posted to it (:meth:`SessionView.drained`), s."""


class SessionView(Widget):
    """The transcript and state of one session.

    Args:
        session_id: the session shown.
        controllers: the app's controllers, which do the work of each message.
        banner: the text at the top of the transcript.
    """

    DEFAULT_CSS = css_beside(__file__)

    def __init__(self, session_id: str, controllers: DeskControllers, *, banner: str) -> None:
        super().__init__()
        self.session_id = session_id
        self.usage: TokenUsage | None = None
        """The session's model requests summed, as the gateway last said (None: none yet)."""
        """The session this view shows."""
        self.running_turn: str | None = None
        """The turn shown as running, if any (the terminal's input thread reads it too)."""
        self.queue = SessionQueue()
        """The prompts waiting in the session's queue, in order (and those offered again)."""
        self.earlier: list[TranscriptEntry] = []
        """Saved messages above the rendered ones, waiting behind "show more"."""
        self.transcript = Transcript(id="transcript")
        """The session's blocks: banner, prompts, replies, tool cards and notes."""
        self.follow_marker = FollowMarker()
        """ "new output below", shown while the transcript does not follow."""
        self._controllers = controllers
        self._banner = banner
        self._held: deque[GatewayMessage] | None = None  # handled on release, in order

    def compose(self) -> ComposeResult:
        with self.transcript:
            yield Static(self._banner, classes="banner", markup=False)
        yield self.follow_marker

    async def drained(self, timeout_s: float = DRAIN_S) -> None:
        """Return once the view handled every message posted to it before this call (or after
        ``timeout_s`` seconds: a view removed meanwhile never answers)."""
        done = asyncio.Event()
        if self.call_later(done.set):
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(done.wait(), timeout_s)

    async def add_note(self, text: str, *, error: bool = False, scroll: bool = False) -> Static:
        """Add one line at the end of the transcript (a notice, not a turn).

        Args:
            text: the line.
            error: show it in the error colour.
            scroll: scroll to the end even when the person had scrolled up (an answer to
                something they just typed).
        """
        note = Static(terminal_safe(text), classes="note -error" if error else "note", markup=False)
        await self.transcript.mount(note)
        if scroll:
            self.transcript.scroll_end(animate=False)
        return note

    def hold(self, live: LiveSession | None) -> None:
        """Hold the gateway messages that reach the view from now on, behind the events that
        what the session runs (``live``: its running turn, its child agents that outlived
        their turn; None: nothing) showed so far, until :meth:`release`. Call it on the UI
        thread right after the bridge points at the view, before anything awaits."""
        events = live.events if live is not None else ()
        held = (GatewayMessage(self.session_id, e.seq, e.payload, at=e.at) for e in events)
        self._held = deque(held)

    async def release(self) -> None:
        """Handle the messages held, in order (those that come meanwhile too), then every
        message as it comes."""
        held = self._held
        while held:
            await self._handle(held.popleft())
        self._held = None

    @on(GatewayMessage)
    async def _gateway_message(self, message: GatewayMessage) -> None:
        message.stop()  # this session's own: nobody above the view is to handle it again
        if self._held is not None:
            self._held.append(message)
            return
        await self._handle(message)

    async def _handle(self, message: GatewayMessage) -> None:
        """Hand a gateway message to the controller of its concern (``message.at``: when it
        was delivered, for one drawn again; None: now)."""
        if not self.is_attached:  # the app is exiting: nothing on screen can change any more
            return
        c, at = self._controllers, message.at
        match message.payload:  # the stream's pieces first: they are most of what comes
            case MessageDelta() as delta if c.agents.owns(delta.turn_id):
                c.agents.delta(delta)
            case MessageDelta() as delta:
                await c.turns.delta(self, delta)
                c.gauge.streamed(self, delta)
            case ToolOutput() as output:
                c.tools.output(output)
            case TurnState() as state if c.agents.owns(state.turn_id):
                c.agents.state_changed(state)
            case TurnState() as state:
                c.turns.state_changed(self, state)
            case ChildStarted() as child:
                await c.agents.started(self, child, at)
            case ChildCompleted() as child:
                c.agents.completed(child)
                c.gauge.child_completed(self, child)
            case PromptSteered() as steered if c.agents.owns(steered.turn_id):
                await c.agents.steered(steered)
            case PromptSteered() as steered:
                await c.turns.steered(self, steered)
            case MessageStart() as start:
                await c.turns.started(self, start, at)
                await c.queue.sync(self)
                c.gauge.count_pending(self)
            case MessageComplete() as complete:
                c.tools.turn_ended(complete)
                await c.turns.completed(self, complete)
                c.gauge.turn_completed(self, complete)
                c.gauge.count_pending(self)
            case PromptQueued() as queued:
                await c.turns.queued(self, queued)
                await c.queue.sync(self)
                c.gauge.count_pending(self)
            case PromptDropped() as dropped:
                await c.turns.dropped(self, dropped)
                await c.queue.sync(self)
                c.gauge.count_pending(self)
            case ToolStart() as tool:
                await c.tools.started(self, tool, at)
            case ToolComplete() as tool:
                await c.tools.completed(self, tool, at)
            case ApprovalRequest() as approval:
                await c.tools.approval_requested(self, approval)
                c.agents.approval_requested(approval)
                c.turns.approval_requested(self, approval)
            case ApprovalResolved() as resolved:
                c.tools.approval_resolved(resolved, at)
                c.agents.approval_resolved(resolved)
                c.turns.approval_resolved(self, resolved)
            case CompressionProgressed() as progress:
                await c.compression.progress(self, progress)
            case CompressionComplete() as ended:
                await c.compression.ended(self, ended)
            case ContextWindowKnown() as window:
                c.gauge.window_reported(self, window)
            case SessionEvicted() as evicted:
                await c.sessions.evicted(self, evicted)
            case StoreFailed() as failed:
                await c.sessions.store_failed(self, failed)
            case StoreWaiting() as waiting:
                c.sessions.store_waiting(self.session_id, waiting)

    # -- what the transcript's blocks ask --------------------------------------------------------

    def on_transcript_following(self, message: Transcript.Following) -> None:
        """The transcript stopped (or started again) following the newest content."""
        message.stop()
        self.follow_marker.show_state(message.following, message.new_below)

    def on_follow_marker_clicked(self, message: FollowMarker.Clicked) -> None:
        """A click on "new output below": back to the end."""
        message.stop()
        self.transcript.follow()

    def on_agent_card_stop_requested(self, message: AgentCard.StopRequested) -> None:
        """A child agent's Stop: that child alone."""
        self._controllers.agents.stop(self, message.turn_id)

    def on_approval_prompt_decided(self, message: ApprovalPrompt.Decided) -> None:
        """y / a / n (or a button) on an approval prompt."""
        self._controllers.tools.decided(self, message.prompt, message.decision)

    async def on_earlier_messages_requested(self, message: EarlierMessages.Requested) -> None:
        """ "show more": the previous batch of saved messages."""
        await self._controllers.sessions.show_earlier(self)
