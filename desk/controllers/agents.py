"""Child agents of the session on screen: a card each, nested where their ``delegate`` call is.

``child.start`` mounts an :class:`~desk.widgets.agent_card.AgentCard` right under the tool card
of the ``delegate`` call that started it (inside its parent's card when the parent is a child
itself; under the saved calls that show it when a child that outlived its turn is drawn again
in a new view of its session). The child's own events (its streamed text, its state) go to its
card; its tool calls are mounted inside the card's box (:meth:`AgentsController.box_for`, asked
by the tool-calls controller). ``child.complete`` shows its outcome. The card's Stop stops that
child alone, as the person, through ``session_interrupt`` with the child's id: its parent goes
on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from textual.widget import Widget
from textual.widgets import Static

from agent.stops import StopRequest, Surface
from contract.errors import GatewayError
from contract.events import (
    ApprovalRequest,
    ApprovalResolved,
    ChildCompleted,
    ChildStarted,
    MessageDelta,
    PromptSteered,
    TurnState,
)
from contract.results import ChildOutcome
from contract.text import terminal_safe
from desk.controllers.ports import Notify
from desk.receipts import ReceiptFormatter, note_for
from desk.widgets.status_bar import Clock

if TYPE_CHECKING:  # the widgets of a turn are imported where made: not before the first frame
    from contract.ports import DeskGateway
    from desk.controllers.view import ShownSession
    from desk.widgets.agent_card import AgentCard

STOP_REASON = "stopped with the agent's Stop"
"""The reason of a stop from a child's card."""


class AgentsController:
    """The child-agent cards of the session a view shows.

    Args:
        gateway: the gateway (``session_interrupt`` for a card's Stop).
        clock: the clock of the cards' running times.
        format_receipt: how stop receipts read.
        notify: shows a toast.
        refresh_bindings: redraws the footer's keys (the stop key is live while a child
            runs, also one that outlived its turn).
        count_running: told how many child agents run now, on each start and end (the status
            bar says so while no turn runs).
        count_waiting: told how many of them wait for an approval now, on each request and
            answer (the status bar says so while no turn runs: a background child's card may
            be out of sight).
    """

    def __init__(
        self,
        gateway: DeskGateway,
        *,
        clock: Clock,
        format_receipt: ReceiptFormatter,
        notify: Notify,
        refresh_bindings: Callable[[], None] = lambda: None,
        count_running: Callable[[int], None] = lambda _count: None,
        count_waiting: Callable[[int], None] = lambda _count: None,
    ) -> None:
        self._gateway = gateway
        self._refresh_bindings = refresh_bindings
        self._count_running = count_running
        self._count_waiting = count_waiting
        self._asking: dict[str, str] = {}  # approval request id -> the child turn that asks
        self._clock = clock
        self._format_receipt = format_receipt
        self._notify = notify
        self._cards: dict[str, AgentCard] = {}

    def owns(self, turn_id: str) -> bool:
        """True when ``turn_id`` is a child agent's (its events go to its card)."""
        return turn_id in self._cards

    def card(self, turn_id: str) -> AgentCard | None:
        """The card of a child agent, if shown."""
        card = self._cards.get(turn_id)
        return card if card is not None and card.is_attached else None

    @property
    def cards(self) -> list[AgentCard]:
        """The cards shown, in the order they started."""
        return [c for c in self._cards.values() if c.is_attached]

    @property
    def running(self) -> bool:
        """True while a child agent shown runs (one may outlive its turn, in the background:
        the stop key stops it then)."""
        return any(card.running for card in self._cards.values() if card.is_attached)

    def box_for(self, turn_id: str) -> Widget | None:
        """Where a child agent's own tool cards go (None: not a child's turn)."""
        card = self.card(turn_id)
        return card.box if card is not None else None

    async def started(
        self, view: ShownSession, payload: ChildStarted, at: float | None = None
    ) -> None:
        """``child.start``: a card right under the ``delegate`` call that started it (its
        live card, or, for a child that outlived its turn drawn again, the saved calls that
        show it), running since ``at`` (the clock's seconds, for a child drawn again; None:
        now)."""
        from desk.widgets.agent_card import AgentCard
        from desk.widgets.saved_tool_calls import SavedToolCalls
        from desk.widgets.tool_card import ToolCard

        p = payload
        card = AgentCard(
            p.turn_id,
            p.parent_turn_id,
            p.task,
            background=p.background,
            clock=self._clock,
            started_at=at,
        )
        self._cards[p.turn_id] = card
        call: Widget | None = next(
            (
                c
                for c in view.transcript.query(ToolCard)
                if c.turn_id == p.parent_turn_id and c.call_id == p.call_id
            ),
            None,
        )
        if call is None:
            saved = view.transcript.query(SavedToolCalls).results(SavedToolCalls)
            call = next((c for c in saved if c.made(p.parent_turn_id, p.call_id)), None)
        parent = self.card(p.parent_turn_id)
        if call is not None and isinstance(call.parent, Widget):
            await call.parent.mount(card, after=call)
        elif parent is not None:
            await parent.box.mount(card)
        else:
            await view.transcript.mount(card)
        self._counted()

    def delta(self, payload: MessageDelta) -> None:
        """A child's streamed text."""
        card = self.card(payload.turn_id)
        if card is not None:
            card.add_text(payload.text)

    def state_changed(self, payload: TurnState) -> None:
        """A child's ``turn.state``: its card says when it is being stopped."""
        card = self.card(payload.turn_id)
        if card is not None and payload.state == "stopping":
            card.stopping()

    async def steered(self, payload: PromptSteered) -> None:
        """A child took a steer (its own child's answer): a line in its card."""
        card = self.card(payload.turn_id)
        if card is not None:
            line = f"↳ the answer of agent {payload.steer_id[:6]} reached it here"
            await card.box.mount(Static(terminal_safe(line), classes="note", markup=False))

    def completed(self, payload: ChildCompleted) -> None:
        """``child.complete``: the card shows the outcome."""
        card = self.card(payload.turn_id)
        if card is not None:
            card.finish(payload, note_for(payload, self._format_receipt))
            self._refresh_bindings()
            self._counted()

    def approval_requested(self, payload: ApprovalRequest) -> None:
        """``approval.request``: counted when a child agent asks (its card shows the prompt)."""
        if payload.turn_id in self._cards:
            self._asking[payload.request_id] = payload.turn_id
            self._counted()

    def approval_resolved(self, payload: ApprovalResolved) -> None:
        """``approval.resolved``: that child waits no more."""
        if self._asking.pop(payload.request_id, None) is not None:
            self._counted()

    def _counted(self) -> None:
        running = {k for k, c in self._cards.items() if c.is_attached and c.running}
        self._asking = {r: t for r, t in self._asking.items() if t in running}
        self._count_running(len(running))
        self._count_waiting(len(set(self._asking.values())))

    def stop(self, view: ShownSession, turn_id: str) -> None:
        """A card's Stop: stop that child alone, as the person."""
        stop = StopRequest.by_user(Surface.DESK_BUTTON, STOP_REASON)
        try:
            stopped = self._gateway.session_interrupt(view.session_id, stop, turn_id=turn_id)
        except GatewayError as exc:
            self._notify(exc.message, title="Agent not stopped", severity="error")
            return
        card = self.card(turn_id)
        if stopped is not None and card is not None:
            card.stopping()

    async def show_saved(self, view: ShownSession, outcomes: tuple[ChildOutcome, ...]) -> None:
        """The children of a saved turn, finished, at the end of the transcript (resume)."""
        from desk.widgets.agent_card import AgentCard

        for outcome in outcomes:
            card = AgentCard(
                outcome.turn_id,
                outcome.parent_turn_id,
                outcome.task,
                background=False,
                clock=self._clock,
            )
            self._cards[outcome.turn_id] = card
            parent = self.card(outcome.parent_turn_id)
            await (parent.box if parent is not None else view.transcript).mount(card)
            card.show_outcome(
                outcome.exit_reason,
                outcome.reply,
                completed=outcome.status == "completed",
                note=outcome.note,
            )

    def forget(self) -> None:
        """The view changed session: its cards are gone."""
        self._cards = {k: c for k, c in self._cards.items() if c.is_attached}
        self._counted()
