"""Queued prompts: their place in the queue, and removing one before it runs.

A prompt sent while a turn runs is shown at the end of the transcript as queued (by
:class:`desk.controllers.turns.TurnsController`); this controller numbers the queued prompts
(#1 runs next) and handles their ✕ / Delete through ``prompt_remove``. A prompt the person
removed disappears when its ``prompt.dropped`` arrives; one the system dropped stays, struck
through, with the reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from desk.controllers.ports import FocusPrompt, Notify
from desk.controllers.turns import TurnsController
from desk.widgets.user_prompt import UserPrompt
from tui_gateway.events import PromptDropped
from tui_gateway.types import GatewayError

if TYPE_CHECKING:
    from desk.ports import DeskGateway
    from desk.widgets.session_view import SessionView

REMOVED = "removed"
"""``prompt.dropped`` reason of a prompt the person removed."""


class QueueController:
    """Queued prompts of the session a view shows.

    Args:
        gateway: the gateway (``prompt_remove``).
        turns: keeps the status bar's queued count.
        notify: shows a toast.
        focus_prompt: gives the focus back to the prompt box.
    """

    def __init__(
        self,
        gateway: DeskGateway,
        *,
        turns: TurnsController,
        notify: Notify,
        focus_prompt: FocusPrompt,
    ) -> None:
        self._gateway = gateway
        self._turns = turns
        self._notify = notify
        self._focus_prompt = focus_prompt

    @staticmethod
    def queued_prompts(view: SessionView) -> list[UserPrompt]:
        """The view's queued prompt blocks, in queue order."""
        return [
            block
            for block in view.transcript.query_children(UserPrompt)
            if block.status == "queued"
        ]

    def renumber(self, view: SessionView) -> None:
        """Number the queued prompts again (#1 runs next)."""
        for position, block in enumerate(self.queued_prompts(view), start=1):
            block.position = position

    async def dropped(self, view: SessionView, payload: PromptDropped) -> None:
        """``prompt.dropped`` (after the turn controller marked it): one the person removed
        disappears."""
        if payload.reason == REMOVED:
            block = view.transcript.prompt(payload.turn_id)
            if block is not None and block.is_attached:
                refocus = block.has_focus_within
                await block.remove()
                if refocus:
                    self._focus_prompt()
        self.renumber(view)

    async def take_queued(self, view: SessionView, turn_id: str) -> bool:
        """Take a queued turn's card away as the turn starts.

        A queued ``/compress`` is shown as a queued card (its ✕ can still cancel it) but, once
        it runs, it never gets a ``message.start``: its compression panel and outcome line
        stand for it instead.

        Returns:
            True if a queued card was removed.
        """
        transcript = view.transcript
        block = transcript.prompt(turn_id)
        view.queued.discard(turn_id)
        self._turns.set_queued(view)
        if block is None or block.status != "queued":
            return False
        refocus = block.has_focus_within
        transcript.forget_prompt(turn_id)
        await block.remove()
        if refocus:
            self._focus_prompt()
        self.renumber(view)
        return True

    def remove(self, view: SessionView, turn_id: str) -> None:
        """✕ or Delete on a queued prompt: ask the gateway to drop it."""
        try:
            self._gateway.prompt_remove(view.session_id, turn_id)
        except GatewayError as exc:
            self._notify(exc.message, title="Not removed", severity="error")
