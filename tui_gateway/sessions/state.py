"""The gateway's in-memory state: live sessions and their turns."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from agent.agent import Agent
from agent.compression import Compressor
from agent.context.budget import ContextBudget
from agent.events import TurnResult
from agent.provider.client import ProviderConfig
from agent.provider.types import ChatMessage
from agent.scope import InterruptScope, Registration
from agent.stops import StopRequest
from agent.usage import TokenUsage
from contract.kinds import ChildDelivery
from tui_gateway.turns.approvals import SessionApprovals
from tui_gateway.turns.kinds import TurnKind, TurnStage


@dataclass(slots=True)
class ChildOf:
    """What a child agent's turn knows of the agent that delegated it.

    Attributes:
        parent_turn_id: the turn (a session's turn, or another child) whose ``delegate`` call
            started it.
        parent: that turn's agent (a background child's answer steers it).
        scope: the child's own scope, registered in the parent's (:attr:`Agent.scope`): the
            parent's hard stop cancels it, and stopping this child alone cancels only it.
        registration: its membership of the parent's scope (ended when the child ends).
        background: True when the parent did not wait for it.
        depth: 1 for a child of a session's turn, 2 for that child's child...
        call_id: the parent's ``delegate`` call.
        delivery: how its answer reached the parent, once it has one.
    """

    parent_turn_id: str
    parent: Agent
    scope: InterruptScope
    registration: Registration
    background: bool
    depth: int
    call_id: str
    delivery: ChildDelivery | None = None


@dataclass(slots=True)
class Turn:
    """One turn: a prompt and, once run, exactly one terminal outcome.

    Attributes:
        turn_id: unique id.
        session_id: the session it belongs to.
        prompt: the person's text.
        agent: the agent running it (one agent per turn, so a late stop never reaches the next).
        state: ``queued``, ``running`` or ``done``.
        result: the terminal outcome, set exactly once (by the booking office,
            :meth:`tui_gateway.stops.booking.BookingOffice.settle`).
        started_at: ``time.monotonic()`` when the worker began, or None.
        worker_exited_at: ``time.monotonic()`` when the agent and its event loop had returned.
        done: set once the outcome is booked and published.
        kind: ``prompt`` (a model turn) or ``compress`` (a ``/compress`` turn).
        focus: for a ``compress`` turn, what the summary should keep in view.
        compressor: the compression running in this turn, if any (stops reach it first).
        child: for a child agent's turn (``kind`` ``child``), its link to its parent.
        urgent: a prompt sent with "stop and send": queued ahead of everything else.
        entered_at: ``time.monotonic()`` (seconds, the frontend's host) when the key that
            sent it was made (an Enter), or None when no key sent it: a stop key made after
            it stops it (see :class:`ArmedStop`), one made before it never does.
        pending_stop: a stop key made after its Enter that reached the gateway while the turn
            waited in the queue: it is stopped as it starts (set under the lock, and kept
            once obeyed: a key after it finds the turn stopping already).
        typed: what the person typed (``prompt`` may be more: the ``@file`` mentions' text
            attached to it); "" when not known (``prompt`` is then what was typed). A new
            session's title is made from it.
    """

    turn_id: str
    session_id: str
    prompt: str
    agent: Agent
    state: TurnStage = TurnStage.QUEUED
    result: TurnResult | None = None
    started_at: float | None = None
    worker_exited_at: float | None = None
    done: threading.Event = field(default_factory=threading.Event)
    kind: TurnKind = TurnKind.PROMPT
    focus: str | None = None
    compressor: Compressor | None = None
    child: ChildOf | None = None
    urgent: bool = False
    entered_at: float | None = None
    pending_stop: StopRequest | None = None
    typed: str = ""
    _on_done: list[Callable[[], None]] = field(default_factory=list)
    _done_lock: threading.Lock = field(default_factory=threading.Lock)

    def when_done(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` (on the thread that ends the turn) once :attr:`done` is set; at
        once, on this thread, when it is set already."""
        with self._done_lock:
            if not self.done.is_set():
                self._on_done.append(callback)
                return
        callback()

    def finish(self) -> None:
        """Set :attr:`done` and run the callbacks :meth:`when_done` registered."""
        with self._done_lock:
            self.done.set()
            callbacks, self._on_done = self._on_done, []
        for callback in callbacks:
            callback()

    @property
    def worker_s(self) -> float:
        """Seconds from the worker's start to its exit (0.0 until both happened)."""
        if self.started_at is None or self.worker_exited_at is None:
            return 0.0
        return self.worker_exited_at - self.started_at

    def exited_ms(self, stop: StopRequest) -> float | None:
        """Milliseconds from ``stop`` to the turn's worker having exited (None until it has)."""
        if self.worker_exited_at is None:
            return None
        return max(0.0, (self.worker_exited_at - stop.requested_at) * 1000.0)


@dataclass(frozen=True, slots=True)
class ArmedStop:
    """A stop key that found nothing running in its session, kept for a prompt whose submit
    is in flight: one sent by a key made before it (its Enter), which reaches the gateway
    after the stop did. See :meth:`tui_gateway.stops.booking.BookingOffice.interrupt`.

    Attributes:
        stop: the person's stop.
        keyed_at: ``time.monotonic()`` when the stop key was made (the same clock as
            :attr:`Turn.entered_at`).
    """

    stop: StopRequest
    keyed_at: float


DONE_TURNS_KEPT = 64
"""Ended turns a live session keeps (:meth:`Session.forget_ended_turns`), for
``Gateway.turn`` and late stops naming one."""


@dataclass(slots=True)
class Session:
    """A live conversation.

    Attributes:
        session_id: unique id.
        title: shown in lists; from the first prompt when not given.
        model: the model name the session talks to.
        history: the transcript sent to the model (system prompt first, if any).
        running: the turn being run, if any.
        queue: prompts waiting for the running turn to end, oldest first.
        turns: the session's turns by id, oldest first: every queued and running one, and the
            last :data:`DONE_TURNS_KEPT` ended ones (see :meth:`forget_ended_turns`).
        lock: guards this session's fields; never held while calling out.
        seq: the last event sequence number used for this session.
        seq_limit: the last number of the block a shared store reserved for this session's
            events on this host (see :mod:`tui_gateway.events.shared_events`); 0 before the first.
        approvals: the session's approval prompts and always-allowed tools.
        last_used: ``time.monotonic()`` of the last prompt (eviction picks the oldest).
        store_detached: True once the gateway gave its saving up (an error that will not pass,
            or a quit the database outlasted): kept in memory only, later writes exported.
        title_unsaved: the title changed in memory and the store has not been told yet.
        context: the session's context window and calibrated token count (set when the
            window is first needed).
        weak_after: after a compression that left the session above the compression
            threshold, its size then (tokens): automatic compression waits until the session
            has grown past it instead of running again on every turn; None otherwise.
        children: every child agent's turn of the session, by id, in the order they started
            (also in :attr:`turns`).
        usage: every model request of the session's turns summed, child agents' included (a
            resumed session starts from its saved turns' counts).
        armed_stops: stop keys that found nothing running, oldest first, each kept for the
            submit of a prompt entered before it (set and taken under :attr:`lock`): several
            Enter-Esc pairs read in one burst stop one prompt each.
        key_stopped: the last stop key that stopped a turn (running, or armed for its submit),
            with the key's time, until a "stop and send" prompt entered before that key takes
            it (:func:`tui_gateway.stops.key_stops.take_overtaken`; under :attr:`lock`).
    """

    session_id: str
    title: str
    model: str
    history: list[ChatMessage] = field(default_factory=list)
    running: Turn | None = None
    queue: deque[Turn] = field(default_factory=deque)
    turns: dict[str, Turn] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    seq: int = 0
    seq_limit: int = 0
    approvals: SessionApprovals | None = None
    last_used: float = field(default_factory=time.monotonic)
    store_detached: bool = False
    title_unsaved: bool = False
    context: ContextBudget | None = None
    weak_after: int | None = None
    children: dict[str, Turn] = field(default_factory=dict)
    usage: TokenUsage = field(default_factory=TokenUsage)
    armed_stops: list[ArmedStop] = field(default_factory=list)
    key_stopped: ArmedStop | None = None

    def forget_ended_turns(self) -> None:
        """Drop ended turns from :attr:`turns` but the last :data:`DONE_TURNS_KEPT` (call with
        :attr:`lock` held): each keeps its agent, its tools and its result, and a session that
        runs all day would otherwise hold every turn it ever ran. Their outcomes are in the
        store and in :attr:`history`."""
        ended = [k for k, t in self.turns.items() if t.state == TurnStage.DONE]
        for turn_id in ended[:-DONE_TURNS_KEPT]:
            del self.turns[turn_id]

    def live_children(self) -> list[Turn]:
        """The child agents running now (call with :attr:`lock` held)."""
        return [c for c in self.children.values() if c.state != TurnStage.DONE]

    def orphans(self) -> list[Turn]:
        """The child agents running now whose session turn has ended (background ones that
        outlived it, and theirs), in the order they started (call with :attr:`lock` held)."""
        found = []
        for child in self.live_children():
            root = child
            while root.child is not None and root.child.parent_turn_id in self.children:
                root = self.children[root.child.parent_turn_id]
            parent = root.child.parent_turn_id if root.child is not None else None
            running = self.running
            if running is None or parent != running.turn_id:
                found.append(child)
        return found


def session_provider(provider: ProviderConfig, session: Session) -> ProviderConfig:
    """``provider`` with the session's model (the server's default while it has none)."""
    return replace(provider, model=session.model or provider.model)
