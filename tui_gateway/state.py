"""The gateway's in-memory state: live sessions and their turns."""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass, field

from agent.agent import Agent
from agent.compression import Compressor
from agent.events import TurnResult
from agent.provider.types import ChatMessage
from agent.stops import StopRequest
from tui_gateway.approvals import SessionApprovals
from tui_gateway.kinds import TurnKind, TurnStage


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
            :meth:`tui_gateway.booking.BookingOffice.settle`).
        started_at: ``time.monotonic()`` when the worker began, or None.
        worker_exited_at: ``time.monotonic()`` when the agent and its event loop had returned.
        done: set once the outcome is booked and published.
        kind: ``prompt`` (a model turn) or ``compress`` (a ``/compress`` turn).
        focus: for a ``compress`` turn, what the summary should keep in view.
        compressor: the compression running in this turn, if any (stops reach it first).
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

    def exited_ms(self, stop: StopRequest) -> float | None:
        """Milliseconds from ``stop`` to the turn's worker having exited (None until it has)."""
        if self.worker_exited_at is None:
            return None
        return max(0.0, (self.worker_exited_at - stop.requested_at) * 1000.0)


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
        turns: every turn of the session, by id.
        lock: guards this session's fields; never held while calling out.
        seq: the last event sequence number used for this session.
        seq_limit: the last number of the block a shared store reserved for this session's
            events on this host (see :mod:`tui_gateway.shared_events`); 0 before the first.
        approvals: the session's approval prompts and always-allowed tools.
        last_used: ``time.monotonic()`` of the last prompt (eviction picks the oldest).
        store_detached: True once a store write failed: the session is kept in memory only.
        title_unsaved: the title changed in memory and the store has not been told yet.
        last_request_tokens: prompt plus reply tokens the server reported for the last turn.
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
    last_request_tokens: int = 0
