"""Turns of the session on screen: a prompt in, a stop out, and the turn's events drawn.

A prompt goes to the gateway with ``prompt_submit``; while a turn runs the gateway queues it,
or, when the person steers (Enter with ``busy_input = "steer"``, or Ctrl+T), ``prompt_steer``
hands it to the running turn: it waits at the end of the transcript, marked as a steer, and
moves to where the turn took it when ``prompt.steered`` arrives (between the reply so far and
the rest). "Stop and send" (Ctrl+S) is ``prompt_submit`` with a user stop: the turn stops and
the text runs next. A stop goes with ``session_interrupt`` (it only schedules a cancel, so it
is fast and never blocks). The gateway's ``message.start`` / ``message.delta`` / ``turn.state`` /
``message.complete`` and ``prompt.queued`` / ``prompt.dropped`` come back through the session's
view; this controller draws them into the view's transcript and keeps the status bar and the
Stop button in step with the running turn. A prompt refused as not sent (too large for the
context window) comes back to be shortened: into the prompt box when it is empty, and otherwise
its refusal line says that Up recalls it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from textual.markup import escape
from textual.widgets import Button, Static

from agent.outcome import ExitReason
from agent.provider.errors import ConnectFailed
from agent.stamps import stamp
from agent.stops import StopRequest, Surface
from contract.errors import GatewayError
from contract.events import (
    ApprovalRequest,
    ApprovalResolved,
    MessageComplete,
    MessageDelta,
    MessageStart,
    PromptDropped,
    PromptQueued,
    PromptSteered,
    TurnState,
)
from contract.results import SteerResult, SubmitResult
from contract.text import NOT_SENT_PREFIX, terminal_safe
from desk.controllers.ports import REFUSED_TOAST_S, Notify
from desk.frame_now import frame_now_of
from desk.receipts import ReceiptFormatter, note_for
from desk.stop_key import key_stop
from desk.widgets.prompt_input import PromptInput
from desk.widgets.status_bar import Clock, StatusBar

if TYPE_CHECKING:  # the widgets of a turn are imported where made: not before the first frame
    from contract.ports import DeskGateway
    from desk.controllers.view import ShownSession
    from desk.widgets.user_prompt import UserPrompt

COMMAND_STOP_REASON = "stopped with /stop"
"""The reason a ``/stop`` typed in the prompt box or the console gives."""

REMOVED = "removed"
"""``prompt.dropped`` reason of a prompt the person removed."""

STEER_REASON = "typed while the turn ran"
"""The reason of a steer from the prompt box."""

STOP_AND_SEND_REASON = "stopped to send a new prompt"
"""The reason of the stop that "stop and send" makes."""

RECALL_NOTE = "Up recalls it"
"""Added to a refused prompt's line when the box held text (an empty box gets it back)."""

FRAME_WAIT_S = 1.0
"""Longest wait for the frame that says a turn ended before its reply is drawn again (s): a
bound for when no frame comes (the terminal gone); on a busy machine the frame comes late,
and drawing the reply first would only make it later."""

QUICK_FINISH_CHARS = 8000
"""A reply whose completion leaves at most this many characters to render (its live tail
and the pieces that came with the completion) is finished in the frame that says "idle"."""


def shown(text: str) -> str:
    """A gateway's message as a toast shows it: control characters visible, no markup (it
    may name what a server said, e.g. the models it lists)."""
    return escape(terminal_safe(text))


UNREACHED = ExitReason.failed(ConnectFailed.__name__)
"""The exit reason of a turn whose request never reached the model server."""


def given_back(payload: MessageComplete) -> bool:
    """True when a failed turn's prompt goes back to the prompt box: it was refused as too
    large (not sent), or its request never reached the server (gone mid-session) and nothing
    came back: the model has not seen it (it stays out of the history), so it is the
    person's to send again, as a prompt refused while the server is unreachable stays in the
    box."""
    if payload.status != "failed":
        return False
    if (payload.error or "").startswith(NOT_SENT_PREFIX):
        return True
    return payload.exit_reason == UNREACHED and not payload.text


class TurnsController:
    """Prompts, stops and turn events of the session a view shows.

    Args:
        gateway: the gateway turns run on.
        status: the status bar (turn state, elapsed time, queued count).
        stop_button: the Stop button (enabled while a turn runs).
        prompt: the prompt box (told when a turn runs: its keys and footer change).
        clock: the clock the elapsed time is measured with.
        format_receipt: turns a stop receipt into the marker under a stopped turn.
        turn_ended: True once a turn's ``message.complete`` was posted (the bridge knows).
        refresh_bindings: tells the footer the Stop binding changed.
        notify: shows a toast.
        stopping: called on the UI thread when a stop was sent from it (a key, Stop, ``/stop``,
            Ctrl+S), before the next key is handled (the approvals on screen stop taking
            answers).
    """

    def __init__(
        self,
        gateway: DeskGateway,
        *,
        status: StatusBar,
        stop_button: Button,
        prompt: PromptInput,
        clock: Clock,
        format_receipt: ReceiptFormatter,
        turn_ended: Callable[[str], bool],
        refresh_bindings: Callable[[], None],
        notify: Notify,
        stopping: Callable[[], None] = lambda: None,
    ) -> None:
        self._gateway = gateway
        self._stopping = stopping
        self._status = status
        self._stop_button = stop_button
        self._prompt = prompt
        self._clock = clock
        self._format_receipt = format_receipt
        self._turn_ended = turn_ended
        self._refresh_bindings = refresh_bindings
        self._notify = notify
        self._stopped: set[str] = set()  # turns a stop was sent for, their end not drawn yet
        self._asking: dict[str, str] = {}  # approval request id -> the running turn that asks
        self._quitting = False  # a quit began: no stream is drawn any more

    # -- what the status bar and the Stop button show ------------------------------------------

    def set_running(
        self, view: ShownSession, turn_id: str | None, started_at: float | None = None
    ) -> None:
        """Show ``turn_id`` as the view's running turn (None: nothing runs), its elapsed time
        counted from ``started_at`` (the clock's seconds; None: now)."""
        status = self._status
        if turn_id is None:
            view.running_turn = None
            status.show_turn("idle")
        elif turn_id != view.running_turn:
            view.running_turn = turn_id
            since = self._clock() if started_at is None else started_at
            status.show_turn("waiting", started_at=since)
        self._count_asking(view)
        self._stop_button.disabled = turn_id is None
        self._prompt.busy = turn_id is not None
        self._refresh_bindings()

    def _count_asking(self, view: ShownSession) -> None:
        """Show how many of the running turn's approvals wait (those of other turns are
        forgotten: a turn's approvals end with it)."""
        running = view.running_turn
        self._asking = {r: t for r, t in self._asking.items() if t == running}
        self._status.approvals = len(self._asking)

    def approval_requested(self, view: ShownSession, payload: ApprovalRequest) -> None:
        """``approval.request`` of the view's running turn: the status bar says it waits for
        the person (a child agent's is counted by the agents controller)."""
        if payload.turn_id == view.running_turn:
            self._asking[payload.request_id] = payload.turn_id
            self._count_asking(view)

    def approval_resolved(self, view: ShownSession, payload: ApprovalResolved) -> None:
        """``approval.resolved``: that call waits for the person no more."""
        if self._asking.pop(payload.request_id, None) is not None:
            self._count_asking(view)

    def set_queued(self, view: ShownSession) -> None:
        """Show how many of the view's prompts wait in the queue."""
        self._status.queued = len(view.queue)

    def set_stopping(self) -> None:
        """Say the running turn (or compression) is being stopped."""
        self._status.state = "stopping"

    def stop_sent(self, turn_id: str) -> None:
        """A stop of ``turn_id`` went to the gateway (any thread): what its stream still has
        queued for the screen is taken without being drawn, and its completion draws the reply
        whole. Drawing that backlog (Markdown re-rendered per delta, one frame after another)
        kept "idle" a second or more behind the stop on a busy machine, and burnt the CPU a
        stop is meant to free."""
        self._stopped.add(turn_id)

    def quitting(self) -> None:
        """A quit began (any thread): no stream is drawn any more (the quit waits for the
        turns' threads, which need the CPU the drawing would take)."""
        self._quitting = True

    def drawn(self, turn_id: str) -> bool:
        """False when a delta of ``turn_id`` is not to be drawn: its turn ended or was
        stopped, or a quit began."""
        return not (self._quitting or turn_id in self._stopped or self._turn_ended(turn_id))

    # -- in and out ----------------------------------------------------------------------------

    def send(
        self, view: ShownSession, text: str, enter_time: float | None = None
    ) -> SubmitResult | None:
        """Send a prompt (not a command) for the view's session.

        ``enter_time`` goes with it: a stop key made after that Enter stops its turn, even one
        that reached the gateway before this submit did (:mod:`tui_gateway.stops.key_stops`).

        Args:
            view: the session shown.
            text: the prompt.
            enter_time: when the Enter that sent it was made (``Message.time``,
                ``time.monotonic()`` seconds), or None when no key sent it.

        Returns:
            what the gateway did with it (run now or queued); None when it refused it (a toast
            says why; the caller gives the text back to the prompt box).
        """
        try:
            return self._gateway.prompt_submit(view.session_id, text, entered_at=enter_time)
        except GatewayError as exc:
            self._refused(exc)
            return None

    def _refused(self, exc: GatewayError, title: str = "Prompt not sent") -> None:
        self._notify(shown(exc.message), title=title, severity="error", timeout=REFUSED_TOAST_S)

    def steer(self, view: ShownSession, text: str) -> SteerResult | None:
        """Steer the view's running turn with ``text`` (as the person, from the keyboard).

        Returns:
            what the gateway did (steered, or made it a prompt); None when it refused it.
        """
        stop = StopRequest.soft(Surface.DESK_KEY, STEER_REASON)
        try:
            return self._gateway.prompt_steer(view.session_id, text, stop)
        except GatewayError as exc:
            self._refused(exc, "Not sent")
            return None

    def stop_and_send(
        self, view: ShownSession, text: str, key_time: float | None = None
    ) -> SubmitResult | None:
        """Stop what the session runs now (the gateway knows, whatever the view shows) as the
        person and run ``text`` next, ahead of the queue; ``key_time`` is the Ctrl+S's."""
        stop = StopRequest.by_user(Surface.DESK_KEY, STOP_AND_SEND_REASON)
        try:
            result = self._gateway.prompt_submit(
                view.session_id, text, stop=stop, entered_at=key_time
            )
        except GatewayError as exc:
            self._refused(exc)
            return None
        if result.queued:
            self.set_stopping()
            self._stopping()
        return result

    async def show_steer(self, view: ShownSession, text: str, result: SteerResult) -> None:
        """Show a steer the running turn took (waiting for its next step), or the prompt it
        became."""
        if not result.steered:
            sent = SubmitResult(turn_id=result.turn_id, queued=result.queued)
            await self.show_sent(view, text, sent)
            return
        block = await view.transcript.add_prompt(result.steer_id, text, pending=True)
        block.status = "steer"  # below the turn it steers, even one whose start is not drawn

    async def steered(self, view: ShownSession, payload: PromptSteered) -> None:
        """``prompt.steered``: the steer moves to where the turn took it, and the rest of the
        reply goes under it (a background child's answer shows as a line there)."""
        from desk.widgets.assistant_reply import AssistantReply

        transcript = view.transcript
        reply = transcript.reply(payload.turn_id)
        if reply is None or not reply.is_attached:
            reply = await transcript.add_reply(payload.turn_id)
        if payload.issuer == "user":
            transcript.started(payload.steer_id)  # it has its place now (moved below)
            block = transcript.prompt(payload.steer_id)
            if block is None or not block.is_attached:
                block = await transcript.add_prompt(payload.steer_id, payload.text)
            block.status = "steered"
            shown: UserPrompt | Static = block
        else:
            line = f"↳ the answer of agent {payload.steer_id[:6]} reached the turn here"
            shown = Static(terminal_safe(line), classes="note", markup=False)
            await transcript.mount(shown)
        if reply.text.strip() or reply.reasoning.strip():
            await reply.finish(reply.text, "completed")  # the reply so far, then the steer
            transcript.move_child(shown, after=reply)
            rest = AssistantReply(payload.turn_id, segment=reply.segment + 1)
            await transcript.mount(rest, after=shown)
            transcript.set_reply(payload.turn_id, rest)
        else:
            transcript.move_child(shown, before=reply)

    async def show_sent(self, view: ShownSession, text: str, result: SubmitResult) -> None:
        """Show a prompt the gateway took: running (in the transcript), or queued behind the
        running turn (in the queue above the prompt box: the caller syncs it). One that runs
        is shown at once, below what its turn's start will be drawn after (the gateway ran
        what came before it; the screen may not have drawn it yet)."""
        if result.queued:
            view.queue.add(result.turn_id, text)
            self.set_queued(view)
        else:
            await view.transcript.add_prompt(result.turn_id, text, pending=True)
            self.set_running(view, result.turn_id)

    def stop(
        self,
        view: ShownSession,
        surface: Surface,
        read_at: float | None = None,
        keyed_at: float | None = None,
    ) -> str | None:
        """Hard-stop what the view's session runs now, as the person.

        The gateway decides which turn that is, not the view (it may still show a turn that
        has ended while the next one runs): :mod:`tui_gateway.stops.key_stops`.

        Args:
            view: the session shown.
            surface: ``desk.key`` or ``desk.button`` (``/stop`` is :meth:`stop_by_command`,
                ``desk.command``).
            read_at: ``time.monotonic()`` when the key or click was read (None: now); the
                stop receipt counts from then.
            keyed_at: a stop key's own time (``Message.time``): a prompt entered before it
                whose submit has not reached the gateway yet is stopped when it does; None
                for a click or a command.

        Returns:
            the stopped turn's id, or None when nothing ran (yet).
        """
        stop = StopRequest.by_user(surface) if read_at is None else key_stop(read_at, surface)
        stopped = self._gateway.session_interrupt(view.session_id, stop, keyed_at=keyed_at)
        if stopped is not None:
            self.stop_sent(stopped)
            if view.running_turn is not None:  # not only background child agents
                self.set_stopping()
            self._stopping()  # its approvals take no answer from the keys that follow
        return stopped

    def stop_by_command(
        self, view: ShownSession, reason: str = COMMAND_STOP_REASON, title: str = "/stop"
    ) -> None:
        """``/stop`` or the palette's Stop: a ``desk.command`` stop, or "nothing is running"."""
        stop = StopRequest.by_user(Surface.DESK_COMMAND, reason)
        if self._gateway.session_interrupt(view.session_id, stop) is None:
            self._notify("nothing is running", title=title)
        else:
            self._stopping()

    # -- gateway events ------------------------------------------------------------------------

    async def started(
        self, view: ShownSession, payload: MessageStart, at: float | None = None
    ) -> None:
        """``message.start``: show the reply block under its prompt; ``at``: when it came
        (the clock's seconds, for a turn drawn again; None: now)."""
        transcript = view.transcript
        prompt = await transcript.add_prompt(payload.turn_id, payload.prompt)
        transcript.started(payload.turn_id)  # in the gateway's order, shown early or not
        prompt.status = "sent"
        view.queue.pop(payload.turn_id)  # it leaves the queue for the transcript
        self.set_queued(view)
        await transcript.add_reply(payload.turn_id)
        self.set_running(view, payload.turn_id, at)

    async def delta(self, view: ShownSession, payload: MessageDelta) -> None:
        """``message.delta``: stream the piece into its reply."""
        transcript = view.transcript
        reply = transcript.reply(payload.turn_id)
        if reply is None:
            reply = await transcript.add_reply(payload.turn_id)
        if not self.drawn(payload.turn_id):
            reply.absorb(payload.text, payload.reasoning)  # the completion draws it
        else:
            await reply.append(payload.text, payload.reasoning)

    def state_changed(self, view: ShownSession, payload: TurnState) -> None:
        """``turn.state``: waiting, streaming, retrying, stopping."""
        if payload.turn_id == view.running_turn:
            status = self._status
            detail = payload.detail if payload.state == "retrying" else ""
            status.show_turn(payload.state, detail=detail, started_at=status.started_at)

    async def _frame_out(self) -> None:
        """Wait (at most :data:`FRAME_WAIT_S`) until a frame with the status bar as it is now
        went out: the frame that draws a long reply again took up to a second on a busy
        machine, and "idle" waited for it. Painted, not refreshed: the screen's refresh
        callbacks could run before the bar's new text reached the screen, and the reply's
        text then went out in the same (slow) frame as "idle"."""
        status = self._status
        if status.is_running and status.screen is status.app.screen:  # not under a modal
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(status.wait_painted(), FRAME_WAIT_S)

    async def completed(self, view: ShownSession, payload: MessageComplete) -> None:
        """``message.complete``: "idle" and the idle keys, the canonical text, and the stop
        marker or error line.

        A reply that streamed on screen to its end (its last pieces only left to draw, see
        :data:`QUICK_FINISH_CHARS`) is finished in the same frame as "idle": its last words
        are on screen one frame after the completion (waiting for a frame of "idle" alone
        first kept them two frames behind, 100-200 ms on a loaded machine). Otherwise (a
        stop, whose backlog was taken without being drawn; the canonical text differing from
        the stream) "idle" goes out in a frame of its own first, since drawing the reply whole
        may take a while on a busy machine. During a quit only the reply's outcome is noted:
        drawing it took the UI thread's CPU and the GIL from the quit's own thread, which saves
        and closes the store."""
        stamp("ui.complete", payload.turn_id)
        view.transcript.started(payload.turn_id)  # a turn that ended before it started
        stopped = payload.turn_id in self._stopped
        self._stopped.discard(payload.turn_id)
        if self._quitting:  # saved already, and the app ends next: nothing is drawn
            reply = view.transcript.reply(payload.turn_id)
            if reply is not None:
                reply.ended(payload.status, note_for(payload, self._format_receipt))
            return
        transcript = view.transcript
        reply = transcript.reply(payload.turn_id)
        if reply is None:
            reply = await transcript.add_reply(payload.turn_id)
        note = note_for(payload, self._format_receipt)
        if not note:
            note = payload.length_notice()
        if given_back(payload):
            note = self._give_back(view, payload.turn_id, note)
        quick = not stopped and reply.finishes_quickly(payload.text, QUICK_FINISH_CHARS)
        idle = payload.turn_id == view.running_turn
        if stopped:
            reply.hold()  # what it drew last stays until it is drawn whole, after "idle"
        if idle:
            self.set_running(view, None)
            stamp("ui.idle_set", payload.turn_id)
            if not quick:
                frame_now_of(self._status)
                await self._frame_out()
                stamp("ui.frame_out", payload.turn_id)
        await reply.finish(payload.text, payload.status, note)  # no frame in between when quick
        if idle and quick:
            frame_now_of(self._status)  # "idle" and the last words, not at the next tick
        stamp("ui.finished", payload.turn_id)

    def _give_back(self, view: ShownSession, turn_id: str, note: str) -> str:
        """A prompt refused as not sent (too large): its text goes back in the prompt box to be
        shortened and sent, when the box is empty; otherwise what was typed stays, and the
        refusal line (``note``, returned) says that Up recalls it."""
        block = view.transcript.prompt(turn_id)
        if block is None or not block.text.strip():
            return note
        box = self._prompt
        if not box.text.strip():
            box.give_back(block.text)
            return note
        if block.text not in box.prompt_history.entries and not box.prompt_history.browsing:
            box.prompt_history.add(block.text)  # sent from elsewhere (a prompt offered again)
        return f"{note} · {RECALL_NOTE}"

    async def queued(self, view: ShownSession, payload: PromptQueued) -> None:
        """``prompt.queued``: the prompt waits at its place (again, with its new text, after an
        edit)."""
        block = view.transcript.prompt(payload.turn_id)
        if block is not None and block.status == "sent":
            return  # it has started already
        compress = payload.text.startswith("/compress")  # a queued compression's line
        view.queue.add(payload.turn_id, payload.text, payload.position, compress=compress)
        self.set_queued(view)

    async def dropped(self, view: ShownSession, payload: PromptDropped) -> None:
        """``prompt.dropped``: a queued prompt will never run. One the person removed just
        goes; one the system dropped stays in the transcript, struck through, with why."""
        view.queue.pop(payload.turn_id)
        self.set_queued(view)
        view.transcript.started(payload.turn_id)  # it never starts: no longer pending
        if payload.reason == REMOVED:
            return
        block = view.transcript.prompt(payload.turn_id)
        if block is None:
            block = await view.transcript.add_prompt(payload.turn_id, payload.text)
        block.detail = payload.reason
        block.status = "dropped"
