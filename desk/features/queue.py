"""Queued prompts: their place in the queue, and removing one before it runs.

A prompt sent while a turn runs is shown at the end of the transcript as queued (by
:class:`desk.app.DeskApp`); this part numbers the queued prompts (#1 runs next) and handles
their ✕ / Delete through ``prompt_remove``. A prompt the person removed disappears when its
``prompt.dropped`` arrives; one the system dropped stays, struck through, with the reason.
"""

from __future__ import annotations

from textual import on

from desk.features.base import DeskBase
from desk.messages import PromptWasDropped, PromptWasQueued, TurnStarted
from desk.widgets.prompt_input import PromptInput
from desk.widgets.user_prompt import UserPrompt
from tui_gateway.types import GatewayError

REMOVED = "removed"
"""``prompt.dropped`` reason of a prompt the person removed."""


class QueueFeature(DeskBase):
    """Queued prompts (a part of :class:`desk.app.DeskApp`)."""

    def queued_prompts(self) -> list[UserPrompt]:
        """The queued prompt blocks, in queue order."""
        return [
            block
            for block in self.transcript.query_children(UserPrompt)
            if block.status == "queued"
        ]

    def _renumber(self) -> None:
        for position, block in enumerate(self.queued_prompts(), start=1):
            block.position = position

    # These run after the app's own handlers of the same messages.

    @on(PromptInput.Submitted)
    @on(PromptWasQueued)
    @on(TurnStarted)
    def _queue_changed(self) -> None:
        """A prompt was queued, or the next one started: number them again."""
        self._renumber()

    @on(PromptWasDropped)
    async def _prompt_dropped(self, message: PromptWasDropped) -> None:
        """``prompt.dropped``: a prompt the person removed disappears."""
        if not self._ours(message.session_id):
            return
        if message.payload.reason == REMOVED:
            block = self.transcript.prompt(message.payload.turn_id)
            if block is not None and block.is_attached:
                refocus = block.has_focus_within
                await block.remove()
                if refocus:
                    self.focus_prompt()
        self._renumber()

    async def take_queued(self, turn_id: str) -> bool:
        """Take a queued turn's card away as the turn starts.

        A queued ``/compress`` is shown as a queued card (its ✕ can still cancel it) but, once
        it runs, it never gets a ``message.start``: its compression panel and outcome line
        stand for it instead.

        Returns:
            True if a queued card was removed.
        """
        block = self.transcript.prompt(turn_id)
        self._queued.discard(turn_id)
        self._set_queued()
        if block is None or block.status != "queued":
            return False
        refocus = block.has_focus_within
        self.transcript.forget_prompt(turn_id)
        await block.remove()
        if refocus:
            self.focus_prompt()
        self._renumber()
        return True

    def on_user_prompt_remove_requested(self, message: UserPrompt.RemoveRequested) -> None:
        """✕ or Delete on a queued prompt."""
        if self._session_id is None:
            return
        try:
            self.gateway.prompt_remove(self._session_id, message.turn_id)
        except GatewayError as exc:
            self.notify(exc.message, title="Not removed", severity="error")
