"""What each session's running turn has shown so far, kept to draw it again.

A session's view is made anew each time the desk switches to it (:mod:`desk.controllers.sessions`),
from the store's saved messages; the running turn's messages are saved only when it ends. So
the bridge (:mod:`desk.bridge`) keeps here, for every session, the events of its running turn
as it delivered them: from the turn's ``message.start`` to its ``message.complete``, with the
time each was delivered. Switching to the session hands them to its new view first, and the
view handles them as it would have live, through the same handlers: the prompt, the reply so
far, the tool cards with their command and start time (the time a card's duration counts
from), an approval still waiting (answerable), the child agents' cards, and the status bar's
state and elapsed time. The live events that follow come after them, in order.

What is kept stays small: pieces of streamed text (and of a call's output) join the last piece
of the same reply (or call) kept after the last control event, so a long reply costs one entry;
a call's output keeps its last :data:`OUTPUT_KEPT_CHARS` characters (the card shows fewer). A
turn's events are forgotten when it ends, and so are a session's when it is evicted.

Not thread-safe: the bridge uses it under its own lock, on its delivery thread, and while it
points its deliveries at a new view.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from contract.events import (
    ApprovalRequest,
    ApprovalResolved,
    ChildCompleted,
    ChildStarted,
    CompressionComplete,
    CompressionProgressed,
    MessageComplete,
    MessageDelta,
    MessageStart,
    Payload,
    PromptSteered,
    SessionEvicted,
    ToolComplete,
    ToolOutput,
    ToolStart,
    TurnState,
)

OUTPUT_KEPT_CHARS = 64_000
"""Characters of a tool call's output kept (its card shows at most this many)."""

KEPT: frozenset[type[Payload]] = frozenset(
    {
        MessageDelta,
        TurnState,
        ToolStart,
        ToolOutput,
        ToolComplete,
        ApprovalRequest,
        ApprovalResolved,
        PromptSteered,
        ChildStarted,
        ChildCompleted,
        CompressionProgressed,
        CompressionComplete,
    }
)
"""Payload types of a running turn that its view draws (besides its ``message.start``). The
queue's events are not among them: a new view reads the queue from the gateway."""


@dataclass(frozen=True, slots=True)
class KeptEvent:
    """One event of a running turn, as the bridge delivered it.

    Attributes:
        seq: the event's per-session sequence number (of its last piece, for joined pieces).
        at: when the bridge delivered it (the app's clock, seconds; of its first piece).
        payload: the payload (pieces of text or output joined).
    """

    seq: int
    at: float
    payload: Payload


@dataclass(frozen=True, slots=True)
class LiveTurn:
    """A session's running turn as shown so far.

    Attributes:
        session_id: the session.
        turn_id: the running turn.
        started_at: when its ``message.start`` was delivered (the app's clock, seconds).
        events: its events, oldest first, its ``message.start`` first.
    """

    session_id: str
    turn_id: str
    started_at: float
    events: tuple[KeptEvent, ...]


@dataclass(slots=True)
class _Entry:
    """A kept event and the pieces joined to it since (joined when read: :meth:`_Entry.kept`).

    Joining each piece as it came copied the whole reply so far every time (quadratic in the
    reply's length, on the delivery thread)."""

    seq: int
    at: float
    payload: Payload
    more: list[Payload] = field(default_factory=list)
    chars: int = 0

    def add(self, seq: int, piece: Payload) -> None:
        self.seq = seq
        self.more.append(piece)
        if isinstance(piece, ToolOutput):
            self.chars += len(piece.text)
            if self.chars > 2 * OUTPUT_KEPT_CHARS:  # amortized: one cut per 64k characters
                self.payload = self.kept().payload
                self.more.clear()
                self.chars = 0

    def kept(self) -> KeptEvent:
        payload = self.payload
        if self.more:
            payload = _joined(payload, self.more)
        return KeptEvent(self.seq, self.at, payload)


@dataclass(slots=True)
class _Log:
    turn_id: str
    started_at: float
    events: list[_Entry] = field(default_factory=list)


class LiveTurns:
    """The events of every session's running turn (see the module's docstring)."""

    def __init__(self) -> None:
        self._logs: dict[str, _Log] = {}

    def note(self, session_id: str, seq: int, at: float, payload: Payload) -> None:
        """Keep (or forget) what ``payload`` adds to its session's running turn.

        Args:
            session_id: the event's session.
            seq: its sequence number.
            at: when it was delivered (the app's clock, seconds).
            payload: the event's payload.
        """
        if isinstance(payload, MessageStart):
            self._logs[session_id] = _Log(payload.turn_id, at, [_Entry(seq, at, payload)])
            return
        log = self._logs.get(session_id)
        if log is None:
            return
        if isinstance(payload, MessageComplete):
            if payload.turn_id == log.turn_id:
                del self._logs[session_id]
        elif isinstance(payload, SessionEvicted):
            del self._logs[session_id]
        elif type(payload) in KEPT:
            _append(log.events, seq, at, payload)

    def running(self, session_id: str) -> LiveTurn | None:
        """The running turn of ``session_id`` as shown so far, or None when none runs."""
        log = self._logs.get(session_id)
        if log is None:
            return None
        events = tuple(entry.kept() for entry in log.events)
        return LiveTurn(session_id, log.turn_id, log.started_at, events)


def _append(events: list[_Entry], seq: int, at: float, payload: Payload) -> None:
    """Add ``payload``, joined to the last piece of its reply or call kept since the last
    control event when it is a piece (their order among other replies' and calls' pieces does
    not change what is drawn)."""
    if not payload.CONTROL:
        for index in range(len(events) - 1, -1, -1):
            earlier = events[index]
            if earlier.payload.CONTROL:
                break
            if earlier.payload.merged(payload) is not None:  # pieces: constant-size payloads
                earlier.add(seq, payload)
                return
    if isinstance(payload, CompressionComplete):  # its progress is done: the outcome says all
        events[:] = [
            e
            for e in events
            if not (
                isinstance(e.payload, CompressionProgressed)
                and e.payload.turn_id == payload.turn_id
            )
        ]
    events.append(_Entry(seq, at, payload))


def _joined(first: Payload, pieces: list[Payload]) -> Payload:
    """``first`` with ``pieces`` joined to it, as :meth:`Payload.merged` joins them, in one
    pass; a call's output cut to its last :data:`OUTPUT_KEPT_CHARS` characters."""
    if isinstance(first, MessageDelta):
        deltas = [first, *(p for p in pieces if isinstance(p, MessageDelta))]
        text = "".join(d.text for d in deltas)
        return MessageDelta(first.turn_id, text, "".join(d.reasoning for d in deltas))
    if isinstance(first, ToolOutput):
        text = first.text + "".join(p.text for p in pieces if isinstance(p, ToolOutput))
        return replace(first, text=text[-OUTPUT_KEPT_CHARS:])
    payload = first
    for piece in pieces:  # e.g. a compression's progress: the newest counts
        payload = payload.merged(piece) or piece
    return payload
