"""Tool calls in the transcript: a card per call, and the approval prompt inside it.

Where a card goes: a turn's reply block is mounted when the turn starts. A tool call that comes
before any reply text is shown above that (still empty) block, so the reply the model writes
after the tool reads below the card. When the model wrote text before calling the tool, that
text stays where it is, the card goes under it, and a new reply block under the card takes the
rest of the reply (``message.complete`` carries the last model call's text, which is exactly
what that last block shows).

Approvals: ``approval.request`` mounts an :class:`ApprovalPrompt` in the card of the call that
asks, without the focus: only its own keys answer it (:mod:`desk.approval_keys`): its buttons,
its y / a / n once the person moved the focus to it, and, while Esc is not the stop key, the
Alt chords, read here from the prompt box (:meth:`ToolCallsController.answer_key`) and from
the app's bindings (:meth:`ToolCallsController.answer_now`); the oldest prompt still waiting
takes a chord. Words typed in the prompt box stay there. Esc is not taken from the app: it
stops the turn, and the gateway resolves the approval as denied
(``approval.resolved{reason: stopped}``).

A stop makes every prompt on screen stop waiting at once (:meth:`ToolCallsController.stopping`),
before any key typed after it is handled: the gateway resolves them, but its
``approval.resolved`` may reach the screen after those keys, and a plain ``a`` typed after Esc
(Esc then "all good", read at once on a busy machine) was taken as "allow always", not typed.
The stop key taken on the terminal's input thread asks for it through the app's queue, ahead of
the keys read after it (:mod:`desk.controllers.stop_keys`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from textual.widget import Widget

from contract.errors import GatewayError
from contract.events import (
    ApprovalRequest,
    ApprovalResolved,
    MessageComplete,
    ToolComplete,
    ToolOutput,
    ToolStart,
)
from desk.approval_keys import CARD_FOCUS_KEY, ApprovalKeys, Decision, key_hint
from desk.controllers.ports import FocusPrompt, Notify
from desk.widgets.status_bar import Clock

if TYPE_CHECKING:  # the widgets of a turn are imported where made: not before the first frame
    from contract.ports import DeskGateway
    from desk.controllers.view import ShownSession
    from desk.widgets.approval_prompt import ApprovalPrompt
    from desk.widgets.tool_card import ToolCard

MAX_CARDS = 256
"""Cards remembered before those no longer on screen are forgotten."""

CardKey = tuple[str, str]
"""A card's key: the turn that made the call and the call's id. A call id alone is not enough:
it is the model server's, unique within one reply at best; child agents (and later turns) can
get the same id for the same call (a server that derives it from the request does), and each
call needs its own card and its own outcome."""


class ToolCallsController:
    """Tool cards and approval prompts.

    Args:
        gateway: the gateway (``approval_respond``).
        clock: the clock a card's running time is measured with.
        notify: shows a toast.
        focus_prompt: gives the focus back to the prompt box.
        refresh_bindings: tells the footer the Alt+y / Alt+a / Alt+n keys came or went.
        box_for: where a child agent's tool cards go (its card's box), None for a turn's own.
        chords: True when Alt+y / Alt+a / Alt+n answer (Esc is not the stop key).
        focus_prompt_now: gives the focus back to the prompt box before the next key is
            handled (``focus_prompt`` when None).
    """

    def __init__(
        self,
        gateway: DeskGateway,
        *,
        clock: Clock,
        notify: Notify,
        focus_prompt: FocusPrompt,
        refresh_bindings: Callable[[], None] = lambda: None,
        box_for: Callable[[str], Widget | None] = lambda _turn_id: None,
        chords: bool = False,
        focus_prompt_now: FocusPrompt | None = None,
    ) -> None:
        self._gateway = gateway
        self._box_for = box_for
        self._clock = clock
        self._notify = notify
        self._focus_prompt = focus_prompt
        self._focus_now = focus_prompt_now or focus_prompt
        self._refresh_bindings = refresh_bindings
        self._cards: dict[CardKey, ToolCard] = {}
        self._approvals: dict[str, ApprovalPrompt] = {}
        self.keys = ApprovalKeys(chords=chords)
        """The typing rhythm (the app notes every key in it) and the deliberate-key rule."""

    def card(self, turn_id: str, call_id: str) -> ToolCard | None:
        """The card of the call ``call_id`` of the turn ``turn_id``, if shown."""
        card = self._cards.get((turn_id, call_id))
        return card if card is not None and card.is_attached else None

    @property
    def cards(self) -> list[ToolCard]:
        """The cards shown, in the order they were added."""
        return [card for card in self._cards.values() if card.is_attached]

    async def _card_for(
        self,
        view: ShownSession,
        turn_id: str,
        call_id: str,
        name: str,
        arguments: str,
        at: float | None = None,
    ) -> ToolCard:
        from desk.widgets.assistant_reply import AssistantReply
        from desk.widgets.tool_card import ToolCard

        card = self.card(turn_id, call_id)
        if card is not None:
            return card
        card = ToolCard(turn_id, call_id, name, arguments, clock=self._clock, started_at=at)
        if len(self._cards) >= MAX_CARDS:  # forget cards of sessions no longer on screen
            self._cards = {k: c for k, c in self._cards.items() if c.is_attached}
        self._cards[turn_id, call_id] = card
        box = self._box_for(turn_id)
        if box is not None:  # a child agent's call: inside the child's card
            await box.mount(card)
            return card
        transcript = view.transcript
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

    # -- gateway events ------------------------------------------------------------------------

    async def started(
        self, view: ShownSession, payload: ToolStart, at: float | None = None
    ) -> None:
        """``tool.start``: a card for the call, running since ``at`` (the clock's seconds, for
        a call drawn again; None: now)."""
        p = payload
        await self._card_for(view, p.turn_id, p.call_id, p.name, p.arguments, at)

    def output(self, payload: ToolOutput) -> None:
        """``tool.output``: the card's output tail grows."""
        card = self.card(payload.turn_id, payload.call_id)
        if card is not None:
            card.add_output(payload.text)

    async def completed(
        self, view: ShownSession, payload: ToolComplete, at: float | None = None
    ) -> None:
        """``tool.complete``: the card shows the outcome and folds to its summary line; ``at``:
        when it came (the clock's seconds, for a call drawn again; None: now)."""
        p = payload
        # A call a stop cut off before it started has no ``tool.start``: it gets a card here.
        card = await self._card_for(view, p.turn_id, p.call_id, p.name, "", at)
        card.finish(p, at)

    def turn_ended(self, payload: MessageComplete) -> None:
        """``message.complete``: a card of that turn still running gets its end (a turn that
        failed mid-call sends no ``tool.complete`` for it: its card ticked on for ever)."""
        for card in self.cards:
            if card.turn_id == payload.turn_id and not card.done:
                why = payload.error or payload.exit_reason
                text = f"no result: the turn ended ({why}) while this call ran"
                card.finish(ToolComplete(card.call_id, card.tool, text, True, turn_id=card.turn_id))

    # -- approvals -------------------------------------------------------------------------------

    async def approval_requested(self, view: ShownSession, payload: ApprovalRequest) -> None:
        """``approval.request``: the prompt appears in the asking call's card, focused."""
        p = payload
        card = next(
            (
                c
                for c in reversed(self.cards)
                if c.turn_id == p.turn_id and c.tool == p.tool and not c.done and c.approval is None
            ),
            None,
        )
        if card is None:  # not expected: tool.start comes first; still, never lose a prompt
            call_id = f"approval-{p.request_id}"
            card = await self._card_for(view, p.turn_id, call_id, p.tool, p.arguments)
        prompt = await card.ask_approval(p, key_hint(self.keys.chords))
        self._approvals[p.request_id] = prompt
        self._refresh_bindings()

    @property
    def waiting(self) -> ApprovalPrompt | None:
        """The oldest approval prompt on screen that nobody answered yet, if any."""
        return next((p for p in self._approvals.values() if p.is_attached and p.waiting), None)

    def answer_key(self, key: str) -> bool:
        """A key in the prompt box: True when it answered the waiting prompt (it is then not
        typed): an Alt chord, while they answer; a plain key never does (it is typed). Or
        True when it was Shift+Tab and moved the focus to that prompt (:meth:`focus_key`).

        Args:
            key: the key.
        """
        prompt = self.waiting
        if prompt is None:
            return False
        if self.focus_key(key):
            return True
        decision = self.keys.answer(key)
        if decision is None:
            return False
        prompt.decide(decision)
        return True

    def focus_key(self, key: str) -> bool:
        """A key in the prompt box: True when it was Shift+Tab and moved the focus to the
        waiting prompt's card (its y / a / n answer then), whatever else could take the focus
        on the way back from the box (a queued prompt's ✕, a row not sent...).

        Args:
            key: the key.
        """
        prompt = self.waiting
        if key != CARD_FOCUS_KEY or prompt is None or not prompt.focusable:
            return False
        prompt.focus()
        return True

    def answer_now(self, decision: Decision) -> bool:
        """Alt+y / Alt+a / Alt+n: answer the waiting prompt; False when none waits."""
        prompt = self.waiting
        if prompt is None:
            return False
        prompt.decide(decision)
        return True

    def stopping(self) -> None:
        """The person stopped the session's turn (UI thread): no prompt on screen waits any
        more, so no key handled from now on answers one; one that had the focus gives it back
        to the prompt box now, before the next key is handled. Each one shows how it ended
        when its ``approval.resolved`` comes."""
        had_focus = False
        for prompt in self._approvals.values():
            if prompt.is_attached and prompt.waiting:
                had_focus = had_focus or prompt.has_focus_within
                prompt.stopping()
        self._refresh_bindings()
        if had_focus:
            self._focus_now()

    def decided(self, view: ShownSession, prompt: ApprovalPrompt, decision: str) -> None:
        """y / a / n (or a button): send the answer to the gateway."""
        pending = False
        try:
            pending = self._gateway.approval_respond(view.session_id, prompt.request_id, decision)
        except GatewayError as exc:
            self._notify(exc.message, title="Approval not sent", severity="error")
        if not pending and prompt.decision is None:
            prompt.resolve(decision, "it was no longer waiting")
            self._approvals.pop(prompt.request_id, None)
        self._refresh_bindings()
        if prompt.has_focus_within or prompt.answered_with_focus:
            self._focus_prompt()

    def approval_resolved(self, payload: ApprovalResolved, at: float | None = None) -> None:
        """``approval.resolved``: the prompt shows the decision and gives the focus back; ``at``:
        when it came (the clock's seconds, for a call drawn again; None: now)."""
        from desk.widgets.tool_card import ToolCard

        p = payload
        prompt = self._approvals.pop(p.request_id, None)
        if prompt is None or not prompt.is_attached:
            return
        had_focus = prompt.has_focus_within
        prompt.resolve(p.decision, p.reason)
        card = prompt.parent
        if isinstance(card, ToolCard):
            card.approval_resolved(allowed=p.decision in ("once", "always"), at=at)
        self._refresh_bindings()
        if had_focus:
            self._focus_prompt()
