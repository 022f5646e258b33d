"""What each session's running turn (and child agents that outlived theirs) has shown so far,
kept to draw it again.

A session's view is made anew each time the desk switches to it (:mod:`desk.controllers.sessions`),
from the store's saved messages; the running turn's messages are saved only when it ends. So
the bridge (:mod:`desk.bridge`) keeps here, for every session, the events of its running turn
as it delivered them: from the turn's ``message.start`` to its ``message.complete``, with the
time each was delivered. Switching to the session hands them to its new view first, and the
view handles them as it would have live, through the same handlers: the prompt, the reply so
far, the tool cards with their command and start time (the time a card's duration counts
from), an approval still waiting (answerable), the child agents' cards, and the status bar's
state and elapsed time. The live events that follow come after them, in order.

A child agent started in the background may outlive the turn whose ``delegate`` call started it.
At that turn's ``message.complete`` the events of each of its children that still runs (with
the events of that child's own children, finished or not) are kept apart, and the child's
events that follow are added to them, until every agent of that tree has ended
(``child.complete``): a new view draws such a child live as well, its card under its
``delegate`` call (:class:`LiveSession`), and the saved transcript leaves it out.

What is kept stays small: pieces of streamed text (and of a call's output) join the last piece
of the same reply (or call) kept after the last control event, so a long reply costs one entry;
a call's output keeps its last :data:`OUTPUT_KEPT_CHARS` characters (the card shows fewer). A
turn's events are forgotten when it ends (but for its children still running), a child tree's
when its last agent ends, and all of a session's when it is evicted.

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


@dataclass(frozen=True, slots=True)
class LiveSession:
    """What a session runs now, as shown so far: what a new view of it draws first.

    Attributes:
        session_id: the session.
        turn: its running turn (None when none runs).
        background: the events of its child agents that outlived their turn (each tree's
            ``child.start`` first, its own children's events among them), oldest tree first.
        agents: the child agents those events draw (the saved transcript must not draw them).
    """

    session_id: str
    turn: LiveTurn | None
    background: tuple[KeptEvent, ...] = ()
    agents: frozenset[str] = frozenset()

    @property
    def events(self) -> tuple[KeptEvent, ...]:
        """All of them, in the order a view handles them: the background children's first
        (they belong to earlier turns), then the running turn's."""
        return self.background + (self.turn.events if self.turn is not None else ())


@dataclass(slots=True)
class _Log:
    turn_id: str
    started_at: float
    events: list[_Entry] = field(default_factory=list)


@dataclass(slots=True)
class _Tree:
    """A child agent of a session's turn (the root) and the agents under it.

    ``events`` is None while the turn runs (its log holds them), a list of its own once the
    turn ended with an agent of the tree still running."""

    turn_id: str
    members: set[str]
    running: set[str]
    events: list[_Entry] | None = None


@dataclass(slots=True)
class _Children:
    """A session's child-agent trees: root id -> tree (in the order they started), and the
    root of each agent of each tree."""

    trees: dict[str, _Tree] = field(default_factory=dict)
    root_of: dict[str, str] = field(default_factory=dict)

    def tree_of(self, turn_id: str) -> _Tree | None:
        root = self.root_of.get(turn_id)
        return self.trees.get(root) if root is not None else None

    def started(self, payload: ChildStarted, detached: bool) -> None:
        """A child's start: in its parent's tree, or the root of a new one (``detached``: its
        parent turn's events are not kept, so it keeps its own from the start)."""
        root = self.root_of.get(payload.parent_turn_id)
        if root is None or root not in self.trees:
            root = payload.turn_id
            events: list[_Entry] | None = [] if detached else None
            self.trees[root] = _Tree(payload.parent_turn_id, set(), set(), events)
        tree = self.trees[root]
        tree.members.add(payload.turn_id)
        tree.running.add(payload.turn_id)
        self.root_of[payload.turn_id] = root

    def drop(self, root: str) -> None:
        tree = self.trees.pop(root, None)
        for member in tree.members if tree is not None else ():
            self.root_of.pop(member, None)


class LiveTurns:
    """The events of every session's running turn, and of its child agents that outlived their
    turn (see the module's docstring)."""

    def __init__(self) -> None:
        self._logs: dict[str, _Log] = {}
        self._children: dict[str, _Children] = {}

    def note(self, session_id: str, seq: int, at: float, payload: Payload) -> None:
        """Keep (or forget) what ``payload`` adds to its session's running turn, or to a child
        agent of the session that outlived its turn.

        Args:
            session_id: the event's session.
            seq: its sequence number.
            at: when it was delivered (the app's clock, seconds).
            payload: the event's payload.
        """
        if isinstance(payload, SessionEvicted):
            self._logs.pop(session_id, None)
            self._children.pop(session_id, None)
            return
        log = self._logs.get(session_id)
        if isinstance(payload, MessageStart):
            if log is not None:  # its end never came: its children stay as if it had
                self._ended(session_id, log)
            self._logs[session_id] = _Log(payload.turn_id, at, [_Entry(seq, at, payload)])
            return
        if isinstance(payload, ChildStarted):
            detached = log is None or log.turn_id != payload.parent_turn_id
            self._children.setdefault(session_id, _Children()).started(payload, detached)
        children = self._children.get(session_id)
        agent = _turn_of(payload)
        tree = children.tree_of(agent) if children is not None else None
        if tree is not None and isinstance(payload, ChildCompleted):
            tree.running.discard(agent)
        if children is not None and tree is not None and tree.events is not None:
            # an agent of a tree that outlived its turn
            if type(payload) in KEPT:
                _append(tree.events, seq, at, payload)
            if not tree.running:
                children.drop(children.root_of[agent])
                if not children.trees:
                    del self._children[session_id]
            return
        if log is None:
            return
        if isinstance(payload, MessageComplete):
            if payload.turn_id == log.turn_id:
                self._ended(session_id, log)
        elif type(payload) in KEPT:
            _append(log.events, seq, at, payload)

    def _ended(self, session_id: str, log: _Log) -> None:
        """The turn of ``log`` ended: forget its events, but for those of its children's
        trees that still run, which are kept apart from now on."""
        del self._logs[session_id]
        children = self._children.get(session_id)
        if children is None:
            return
        for root, tree in list(children.trees.items()):
            if tree.turn_id != log.turn_id or tree.events is not None:
                continue
            if not tree.running:
                children.drop(root)
                continue
            tree.events = [e for e in log.events if _turn_of(e.payload) in tree.members]
        if not children.trees:
            del self._children[session_id]

    def running(self, session_id: str) -> LiveTurn | None:
        """The running turn of ``session_id`` as shown so far, or None when none runs."""
        log = self._logs.get(session_id)
        if log is None:
            return None
        events = tuple(entry.kept() for entry in log.events)
        return LiveTurn(session_id, log.turn_id, log.started_at, events)

    def shown(self, session_id: str) -> LiveSession | None:
        """What ``session_id`` runs now as shown so far: its running turn and its child agents
        that outlived their turn; None when it runs neither."""
        turn = self.running(session_id)
        children = self._children.get(session_id)
        trees = [t for t in children.trees.values() if t.events is not None] if children else []
        if turn is None and not trees:
            return None
        background = tuple(entry.kept() for tree in trees for entry in tree.events or ())
        agents = frozenset(member for tree in trees for member in tree.members)
        return LiveSession(session_id, turn, background, agents)


def _turn_of(payload: Payload) -> str:
    """The turn (or child agent) an event is about ("" for none)."""
    turn_id = getattr(payload, "turn_id", "")
    return turn_id if isinstance(turn_id, str) else ""


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
