"""Compression: ``/compress [focus]``, the compression panel, its Cancel, and the outcome line.

A ``/compress`` turn emits no ``message.start`` / ``message.complete``: only
``compression.progress`` events and one ``compression.complete``. So the desk treats progress
of a turn it does not know as "a turn is running" (the status bar says ``compressing`` and
Esc / Ctrl+C / Stop stop it through ``session_interrupt``, which rolls a compression back
before commit), and the ``compression.complete`` of a turn that has no prompt in the transcript
as that turn's end. A prompt turn that compresses first shows the same panel; its end is its own
``message.complete``.

The panel's "Cancel compression" button calls ``compression_cancel``: the compression alone
stops. A ``/compress`` turn ends with it; a prompt turn goes on (its request is sent when it
fits without the compression, else the turn ends with a line saying so), so the status bar does
not say "stopping" for it. The stop key (Esc), wherever the focus is, stops the turn,
compression included.
When the outcome arrives the panel shows it for :attr:`CompressionController.linger_s` seconds,
then collapses into one line in the transcript of the session it compressed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.timer import Timer
from textual.widget import Widget

from agent.stops import StopRequest, Surface
from contract.errors import GatewayError
from contract.events import CompressionComplete, CompressionProgressed
from desk.controllers.gauge import ContextGauge
from desk.controllers.ports import FocusPrompt, Notify, SetTimer
from desk.controllers.queue import QueueController
from desk.controllers.turns import TurnsController
from desk.widgets.compression_panel import CompressionPanel, outcome_line
from desk.widgets.status_bar import StatusBar

if TYPE_CHECKING:
    from contract.ports import DeskGateway
    from desk.controllers.view import ShownSession
    from desk.widgets.transcript import Transcript

COMPRESSION_LINGER_S = 2.0
"""How long a finished compression's outcome stays on the panel before it collapses, in s."""


class CompressionController:
    """``/compress``, the compression panel and its Cancel.

    Args:
        gateway: the gateway (``session_compress``, ``compression_cancel``).
        panel: the compression panel.
        status: the status bar (``compressing``).
        turns: shows a compression turn as running.
        queue: takes a queued ``/compress`` card away as it starts.
        gauge: takes off what a committed compression saved.
        set_timer: runs the collapse after the outcome lingered.
        notify: shows a toast.
        focus_prompt: gives the focus back to the prompt box.
    """

    def __init__(
        self,
        gateway: DeskGateway,
        *,
        panel: CompressionPanel,
        status: StatusBar,
        turns: TurnsController,
        queue: QueueController,
        gauge: ContextGauge,
        set_timer: SetTimer,
        notify: Notify,
        focus_prompt: FocusPrompt,
    ) -> None:
        self._gateway = gateway
        self._panel = panel
        self._status = status
        self._turns = turns
        self._queue = queue
        self._gauge = gauge
        self._set_timer = set_timer
        self._notify = notify
        self._focus_prompt = focus_prompt
        self.linger_s = COMPRESSION_LINGER_S
        """Seconds the outcome stays on the panel before it becomes a transcript line."""
        self._compress_turns: set[str] = set()
        self._collapse_timer: Timer | None = None
        self._pending: tuple[ShownSession, CompressionComplete] | None = None
        self._anchor: Widget | None = None

    # -- starting --------------------------------------------------------------------------------

    async def start(self, view: ShownSession, focus: str | None) -> str | None:
        """Ask the gateway to compress the view's session now; returns the turn id, or None."""
        try:
            result = self._gateway.session_compress(view.session_id, focus)
        except GatewayError as exc:
            self._notify(exc.message, title="Not compressed", severity="error")
            return None
        self._compress_turns.add(result.turn_id)
        if not result.queued and view.running_turn is None:  # queued: shown as a queued card
            self._show_compressing(view, result.turn_id)
        return result.turn_id

    def _show_compressing(self, view: ShownSession, turn_id: str) -> None:
        self._turns.set_running(view, turn_id)
        self._status.state = "compressing"

    # -- events ----------------------------------------------------------------------------------

    async def progress(self, view: ShownSession, payload: CompressionProgressed) -> None:
        """``compression.progress``: the panel follows it; an unknown turn is now running."""
        turn_id = payload.turn_id
        if turn_id in self._compress_turns:
            await self._queue.take_queued(view, turn_id)  # a queued /compress starts: card goes
        if view.running_turn is None:
            self._show_compressing(view, turn_id)
        elif (
            turn_id == view.running_turn
            and payload.phase != "done"
            and self._status.state != "stopping"
        ):
            self._status.state = "compressing"
        if self._panel.turn_id != turn_id:
            await self._begin_panel(view, turn_id)
        self._panel.show_progress(payload)

    async def _begin_panel(self, view: ShownSession, turn_id: str) -> None:
        await self.collapse()
        # The outcome line goes where the transcript ended when the compression began (prompts
        # queued meanwhile come after it), or right under the prompt of a prompt turn.
        children = view.transcript.children
        self._anchor = children[-1] if children else None
        # The panel counts from the running turn's start, as the status bar does.
        running = turn_id == view.running_turn
        self._panel.begin(
            turn_id,
            started_at=self._status.started_at if running else None,
            prompt_turn=not self._is_compress_turn(view, turn_id),
        )

    async def ended(self, view: ShownSession, payload: CompressionComplete) -> None:
        """``compression.complete``: the outcome on the panel, then one transcript line."""
        panel = self._panel
        if panel.turn_id != payload.turn_id:
            await self._begin_panel(view, payload.turn_id)
        panel.show_outcome(payload)
        if payload.status == "committed":
            self._gauge.compressed(payload.before_tokens, payload.after_tokens)
        is_compress_turn = self._is_compress_turn(view, payload.turn_id)
        self._compress_turns.discard(payload.turn_id)
        if is_compress_turn and payload.turn_id == view.running_turn:
            self._turns.set_running(view, None)
        if panel.has_focus_within:
            self._focus_prompt()
        self._pending = (view, payload)
        if self._collapse_timer is not None:
            self._collapse_timer.stop()
        if self.linger_s <= 0:
            await self.collapse()
        else:
            self._collapse_timer = self._set_timer(self.linger_s, self.collapse)

    async def collapse(self) -> None:
        """Hide the panel and leave the finished compression's outcome as a transcript line."""
        if self._collapse_timer is not None:
            self._collapse_timer.stop()
            self._collapse_timer = None
        pending, self._pending = self._pending, None
        panel = self._panel
        if not panel.is_attached:
            return
        panel.close()
        if pending is None:
            return
        view, outcome = pending
        transcript = view.transcript
        if not transcript.is_attached:  # that session is no longer shown, or the app exits
            return
        line = outcome_line(outcome)
        anchor, self._anchor = self._anchor, None
        under = _under_prompt(transcript, outcome.turn_id)
        if under is not None:
            await transcript.mount(line, after=under)
        elif anchor is not None and anchor.is_attached and anchor.parent is transcript:
            await transcript.mount(line, after=anchor)
        else:
            await transcript.mount(line)
        transcript.scroll_end(animate=False)

    # -- cancelling ------------------------------------------------------------------------------

    def cancel(self, view: ShownSession, surface: Surface) -> bool:
        """Hard-stop the running compression of the view's session, and only it; False when
        none runs. A ``/compress`` turn is then stopping; a prompt turn goes on."""
        stop = StopRequest.by_user(surface)
        turn_id = self._panel.turn_id
        cancelled = self._gateway.compression_cancel(view.session_id, stop)
        if cancelled and turn_id is not None and self._is_compress_turn(view, turn_id):
            self._turns.set_stopping()
        return cancelled

    def cancel_requested(self, view: ShownSession) -> None:
        """The panel's "Cancel compression" button."""
        self.cancel(view, Surface.DESK_BUTTON)
        self._focus_prompt()

    def _is_compress_turn(self, view: ShownSession, turn_id: str) -> bool:
        """True for a ``/compress`` turn, False for a prompt turn compressing first."""
        return turn_id in self._compress_turns or view.transcript.prompt(turn_id) is None


def _under_prompt(transcript: Transcript, turn_id: str) -> Widget | None:
    """What a prompt turn's compression line goes right after: its prompt, or the last of the
    compression lines already under it (a turn may compress twice). The line stays where the
    compression ran, above the reply and the tool calls the turn went on to while the outcome
    lingered on the panel. None for a turn whose prompt is not shown (``/compress``)."""
    prompt = transcript.prompt(turn_id)
    if prompt is None or not prompt.is_attached or prompt.parent is not transcript:
        return None
    children = list(transcript.children)
    at = children.index(prompt)
    while at + 1 < len(children) and children[at + 1].has_class("compression-note"):
        at += 1
    return children[at]
