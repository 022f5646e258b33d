"""Compression: ``/compress [focus]``, the compression panel, its Cancel, and the outcome line.

A ``/compress`` turn emits no ``message.start`` / ``message.complete``: only
``compression.progress`` events and one ``compression.complete``. So the desk treats progress
of a turn it does not know as "a turn is running" (the status bar says ``compressing`` and
Esc / Ctrl+C / Stop stop it through ``session_interrupt``, which rolls a compression back
before commit), and the ``compression.complete`` of a turn that has no prompt in the transcript
as that turn's end. A prompt turn that compresses first shows the same panel; its end is its own
``message.complete``.

The panel's Cancel button, and Esc while the panel has the focus, call ``compression_cancel``.
When the outcome arrives the panel shows it for :attr:`CompressionFeature.compression_linger_s`
seconds, then collapses into one line in the transcript.
"""

from __future__ import annotations

from typing import Any

from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Static

from agent.stops import StopRequest, Surface
from desk.activity_messages import CompressionEnded, CompressionProgress
from desk.features.base import DeskBase
from desk.slash import SlashCommand, parse_slash, register
from desk.widgets.compression_panel import CompressionPanel, outcome_text
from desk.widgets.prompt_input import PromptInput
from desk.widgets.status_bar import StatusBar
from tui_gateway.events import CompressionComplete
from tui_gateway.types import GatewayError

register(SlashCommand("compress", "[FOCUS]", "summarise the middle of this session now"))

COMPRESSION_LINGER_S = 2.0
"""How long a finished compression's outcome stays on the panel before it collapses, in s."""


class CompressionFeature(DeskBase):
    """``/compress``, the compression panel and its Cancel (a part of :class:`DeskApp`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.compression_linger_s = COMPRESSION_LINGER_S
        """Seconds the outcome stays on the panel before it becomes a transcript line."""
        self._compress_turns: set[str] = set()
        self._collapse_timer: Timer | None = None
        self._pending_outcome: CompressionComplete | None = None
        self._anchor: Widget | None = None

    @property
    def compression_panel(self) -> CompressionPanel:
        """The compression panel."""
        return self.query_one("#compression", CompressionPanel)

    # -- starting --------------------------------------------------------------------------------

    async def handle_compress_slash(self, text: str) -> bool:
        """``/compress [focus]`` typed in the prompt box; True when ``text`` was that command."""
        parsed = parse_slash(text)
        if parsed is None or parsed[0] != "compress":
            return False
        self.query_one(PromptInput).clear()
        await self.start_compression(parsed[1] or None)
        return True

    async def action_compress(self) -> None:
        """The palette's "Compress the conversation"."""
        await self.start_compression(None)

    async def start_compression(self, focus: str | None) -> str | None:
        """Ask the gateway to compress this session now; returns the turn id, or None."""
        if self._session_id is None:
            return None
        try:
            result = self.gateway.session_compress(self._session_id, focus)
        except GatewayError as exc:
            self.notify(exc.message, title="Not compressed", severity="error")
            return None
        self._compress_turns.add(result.turn_id)
        if not result.queued and self._running_turn is None:  # queued: shown as a queued card
            self._show_compressing(result.turn_id)
        return result.turn_id

    def _show_compressing(self, turn_id: str) -> None:
        self._set_running(turn_id)
        self.query_one("#status", StatusBar).state = "compressing"

    # -- events ----------------------------------------------------------------------------------

    async def on_compression_progress(self, message: CompressionProgress) -> None:
        """``compression.progress``: the panel follows it; an unknown turn is now running."""
        if not self._ours(message.session_id):
            return
        payload = message.payload
        turn_id = payload.turn_id
        if turn_id in self._compress_turns:
            await self.take_queued(turn_id)  # a queued /compress starts: its card goes
        if self._running_turn is None:
            self._show_compressing(turn_id)
        elif turn_id == self._running_turn and payload.phase != "done":
            status = self.query_one("#status", StatusBar)
            if status.state != "stopping":
                status.state = "compressing"
        panel = self.compression_panel
        if panel.turn_id != turn_id:
            await self._begin_panel(panel, turn_id)
        panel.show_progress(payload)

    async def _begin_panel(self, panel: CompressionPanel, turn_id: str) -> None:
        await self._collapse()
        # The outcome line goes where the transcript ended when the compression began (prompts
        # queued meanwhile come after it), or above the reply of a prompt turn.
        children = self.transcript.children
        self._anchor = children[-1] if children else None
        panel.begin(turn_id)

    async def on_compression_ended(self, message: CompressionEnded) -> None:
        """``compression.complete``: the outcome on the panel, then one transcript line."""
        if not self._ours(message.session_id):
            return
        payload = message.payload
        panel = self.compression_panel
        if panel.turn_id != payload.turn_id:
            await self._begin_panel(panel, payload.turn_id)
        panel.show_outcome(payload)
        if payload.status == "committed":
            status = self.query_one("#status", StatusBar)
            saved = max(0, payload.before_tokens - payload.after_tokens)
            # The gauge holds the server's count when it has one: take off what was saved
            # (estimated) rather than replace it by an estimate of another kind.
            used = status.context_used
            status.context_used = payload.after_tokens if used is None else max(0, used - saved)
        is_compress_turn = (
            payload.turn_id in self._compress_turns
            or self.transcript.prompt(payload.turn_id) is None
        )
        self._compress_turns.discard(payload.turn_id)
        if is_compress_turn and payload.turn_id == self._running_turn:
            self._set_running(None)
        if panel.has_focus_within:
            self.focus_prompt()
        self._pending_outcome = payload
        if self._collapse_timer is not None:
            self._collapse_timer.stop()
        if self.compression_linger_s <= 0:
            await self._collapse()
        else:
            self._collapse_timer = self.set_timer(self.compression_linger_s, self._collapse)

    async def _collapse(self) -> None:
        """Hide the panel and leave the finished compression's outcome as a transcript line."""
        if self._collapse_timer is not None:
            self._collapse_timer.stop()
            self._collapse_timer = None
        outcome, self._pending_outcome = self._pending_outcome, None
        panel = next(self.query("#compression").results(CompressionPanel), None)
        if panel is None or not panel.is_attached:
            return
        panel.close()
        if outcome is None or not self.transcript.is_attached:
            return
        error = outcome.status not in ("committed", "cancelled", "nothing")
        line = Static(
            "⇊ " + outcome_text(outcome),
            classes="note -error compression-note" if error else "note compression-note",
            markup=False,
        )
        anchor, self._anchor = self._anchor, None
        transcript = self.transcript
        reply = transcript.reply(outcome.turn_id)
        if reply is not None and reply.is_attached:
            await transcript.mount(line, before=reply)
        elif anchor is not None and anchor.is_attached and anchor.parent is transcript:
            await transcript.mount(line, after=anchor)
        else:
            await transcript.mount(line)
        transcript.scroll_end(animate=False)

    # -- cancelling ------------------------------------------------------------------------------

    def on_compression_panel_cancel_requested(
        self, message: CompressionPanel.CancelRequested
    ) -> None:
        """The panel's Cancel button, or Esc on the panel."""
        message.stop()
        self.cancel_compression(Surface.DESK_KEY if message.by_key else Surface.DESK_BUTTON)
        if not message.by_key:
            self.focus_prompt()

    def cancel_compression(self, surface: Surface) -> bool:
        """Hard-stop the running compression as the person; False when none runs."""
        if self._session_id is None:
            return False
        cancelled = self.gateway.compression_cancel(self._session_id, StopRequest.by_user(surface))
        if cancelled:
            self.query_one("#status", StatusBar).state = "stopping"
        return cancelled

    def compression_takes_stop_key(self) -> bool:
        """Esc while the panel has the focus and a compression runs: cancel it (True)."""
        panel = next(self.query("#compression").results(CompressionPanel), None)
        if panel is None or not panel.running or not panel.has_focus_within:
            return False
        self.cancel_compression(Surface.DESK_KEY)
        return True
