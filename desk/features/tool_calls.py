"""Tool calls in the transcript: a card per call, and the approval prompt inside it.

Where a card goes: a turn's reply block is mounted when the turn starts. A tool call that comes
before any reply text is shown above that (still empty) block, so the reply the model writes
after the tool reads below the card. When the model wrote text before calling the tool, that
text stays where it is, the card goes under it, and a new reply block under the card takes the
rest of the reply (``message.complete`` carries the last model call's text, which is exactly
what that last block shows).

Approvals: ``approval.request`` mounts an :class:`ApprovalPrompt` in the card of the call that
asks and focuses it (y / a / n). Esc is not taken from the app: it stops the turn, and the
gateway resolves the approval as denied (``approval.resolved{reason: stopped}``).
"""

from __future__ import annotations

from typing import Any

from desk.activity_messages import (
    ApprovalRequested,
    ApprovalWasResolved,
    ToolCallCompleted,
    ToolCallOutput,
    ToolCallStarted,
)
from desk.features.base import DeskBase
from desk.widgets.approval_prompt import ApprovalPrompt
from desk.widgets.assistant_reply import AssistantReply
from desk.widgets.tool_card import ToolCard
from tui_gateway.types import GatewayError


class ToolCallsFeature(DeskBase):
    """Tool cards and approval prompts (a part of :class:`desk.app.DeskApp`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._tool_cards: dict[str, ToolCard] = {}
        self._approvals: dict[str, ApprovalPrompt] = {}

    def tool_card(self, call_id: str) -> ToolCard | None:
        """The card of a tool call, if shown."""
        card = self._tool_cards.get(call_id)
        return card if card is not None and card.is_attached else None

    @property
    def tool_cards(self) -> list[ToolCard]:
        """The cards shown, in the order they were added."""
        return [card for card in self._tool_cards.values() if card.is_attached]

    async def _card_for(self, turn_id: str, call_id: str, name: str, arguments: str) -> ToolCard:
        card = self.tool_card(call_id)
        if card is not None:
            return card
        card = ToolCard(turn_id, call_id, name, arguments, clock=self._clock)
        if len(self._tool_cards) >= 256:  # forget cards of sessions no longer on screen
            self._tool_cards = {k: c for k, c in self._tool_cards.items() if c.is_attached}
        self._tool_cards[call_id] = card
        transcript = self.transcript
        reply = transcript.reply(turn_id)
        if reply is None or not reply.is_attached:
            reply = await transcript.add_reply(turn_id)
        if reply.text.strip() or reply.reasoning.strip():
            await reply.finish(reply.text, "completed")  # this block's part of the reply is done
            await transcript.mount(card, after=reply)
            rest = AssistantReply(turn_id, segment=reply.segment + 1)
            await transcript.mount(rest, after=card)
            transcript.set_reply(turn_id, rest)
        else:
            await transcript.mount(card, before=reply)
        return card

    async def on_tool_call_started(self, message: ToolCallStarted) -> None:
        """``tool.start``: a card for the call, running."""
        if not self._ours(message.session_id):
            return
        p = message.payload
        await self._card_for(p.turn_id, p.call_id, p.name, p.arguments)

    def on_tool_call_output(self, message: ToolCallOutput) -> None:
        """``tool.output``: the card's output tail grows."""
        if not self._ours(message.session_id):
            return
        card = self.tool_card(message.payload.call_id)
        if card is not None:
            card.add_output(message.payload.text)

    async def on_tool_call_completed(self, message: ToolCallCompleted) -> None:
        """``tool.complete``: the card shows the outcome and folds to its summary line."""
        if not self._ours(message.session_id):
            return
        p = message.payload
        # A call a stop cut off before it started has no ``tool.start``: it gets a card here.
        card = await self._card_for(p.turn_id, p.call_id, p.name, "")
        card.finish(p)

    # -- approvals -------------------------------------------------------------------------------

    async def on_approval_requested(self, message: ApprovalRequested) -> None:
        """``approval.request``: the prompt appears in the asking call's card, focused."""
        if not self._ours(message.session_id):
            return
        p = message.payload
        card = next(
            (
                c
                for c in reversed(self.tool_cards)
                if c.turn_id == p.turn_id and c.tool == p.tool and not c.done and c.approval is None
            ),
            None,
        )
        if card is None:  # not expected: tool.start comes first; still, never lose a prompt
            card = await self._card_for(p.turn_id, f"approval-{p.request_id}", p.tool, p.arguments)
        prompt = await card.ask_approval(p.request_id, p.tool, p.arguments, p.reason)
        self._approvals[p.request_id] = prompt

    def on_approval_prompt_decided(self, message: ApprovalPrompt.Decided) -> None:
        """y / a / n (or a button): send the answer to the gateway."""
        prompt = message.prompt
        session_id = self._session_id
        pending = False
        if session_id is not None:
            try:
                pending = self.gateway.approval_respond(
                    session_id, prompt.request_id, message.decision
                )
            except GatewayError as exc:
                self.notify(exc.message, title="Approval not sent", severity="error")
        if not pending and prompt.decision is None:
            prompt.resolve(message.decision, "it was no longer waiting")
            self._approvals.pop(prompt.request_id, None)
        self.focus_prompt()

    def on_approval_was_resolved(self, message: ApprovalWasResolved) -> None:
        """``approval.resolved``: the prompt shows the decision and gives the focus back."""
        if not self._ours(message.session_id):
            return
        p = message.payload
        prompt = self._approvals.pop(p.request_id, None)
        if prompt is None or not prompt.is_attached:
            return
        had_focus = prompt.has_focus_within
        prompt.resolve(p.decision, p.reason)
        card = prompt.parent
        if isinstance(card, ToolCard):
            card.approval_resolved(allowed=p.decision in ("once", "always"))
        if had_focus:
            self.focus_prompt()
