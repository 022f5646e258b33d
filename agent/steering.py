"""Steering: text added to a running turn, delivered at its next model-call boundary.

A steer is a soft interrupt. Its :class:`~agent.stops.StopRequest` (``hard=False``) stays what
every stop is, a value that says who asks, from where and why; the text rides beside it in a
:class:`Steer`. :meth:`agent.agent.Agent.steer` takes one from any thread and keeps it until the
turn reaches a boundary: the current stream ended (a text reply, or tool calls whose batch has
run) and the next request is not sent yet. It never cuts a stream, a tool call or a
compression; a hard stop is the only thing that aborts.

Where a steer lands in the transcript: as a ``user`` message right where it was delivered,
after the assistant's text reply or after the tool results of a tool-call round, and before the
next model call; the message is marked as a steer (``ChatMessage.steer``). Strict chat templates
(Mistral's, Gemma's) refuse a ``user`` message right after ``tool`` results: the request is
built by :func:`agent.context.shape.well_formed`, which puts the steer's note between the two,
in the request right after the steer and in every later one alike (the transcript keeps the
steer as it happened).

A steer issued by the system (a background child agent's answer) never reads as the person's
words: :meth:`Steer.message` names where it came from.
"""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass, field

from agent.provider.types import ChatMessage
from agent.stops import Issuer, StopRequest, require_soft


def _steer_id() -> str:
    return uuid.uuid4().hex[:12]


@dataclass(frozen=True, slots=True)
class Steer:
    """A soft interrupt and the text it carries.

    Attributes:
        stop: who steers, from where, and why; always a soft stop (``hard=False``).
        text: what to tell the running turn (not empty).
        steer_id: unique id; a steer that cannot be delivered becomes a prompt with this id
            as its turn id.

    Raises:
        ValueError: ``stop`` is a hard stop, or ``text`` is empty.
    """

    stop: StopRequest
    text: str
    steer_id: str = field(default_factory=_steer_id)

    def __post_init__(self) -> None:
        require_soft(self.stop)
        if not self.text.strip():
            raise ValueError("a steer needs text")

    def message(self) -> ChatMessage:
        """The ``user`` message the steer becomes where it is delivered.

        The person's text is sent as typed; the system's is headed by where it came from, so
        the model never takes it for the person's words. Either is marked as a steer.
        """
        if self.stop.issuer is Issuer.USER:
            return ChatMessage(role="user", content=self.text, steer=True)
        head = f"[{self.stop.reason}; not typed by the person]"
        return ChatMessage(role="user", content=f"{head}\n\n{self.text}", steer=True)


class SteerInbox:
    """The steers one turn holds until its next boundary. Thread-safe.

    Offered from any thread, taken on the turn's loop thread at a boundary. Once the turn took
    its last boundary (a final reply, no steer waiting) or ended, the inbox is closed: an offer
    is refused, so the host runs that text as a prompt instead. Nothing offered is lost: what
    was accepted is either delivered or returned by :meth:`close`.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._steers: list[Steer] = []
        self._closed = False

    def offer(self, steer: Steer) -> bool:
        """Keep ``steer`` for the next boundary; False when the inbox is closed."""
        with self._lock:
            if self._closed:
                return False
            self._steers.append(steer)
            return True

    def take(self, *, room: bool, final: bool) -> list[Steer]:
        """The steers to deliver at this boundary, in the order they came.

        Args:
            room: the turn may make another model call; without room they stay for
                :meth:`close` (the turn ends and the host runs them as prompts).
            final: the turn ends here unless a steer is taken: with none, the inbox closes.
        """
        with self._lock:
            taken: list[Steer] = []
            if room:
                taken, self._steers = self._steers, []
            if final and not taken:
                self._closed = True
            return taken

    def close(self) -> list[Steer]:
        """The turn has ended: refuse further offers; returns the steers never delivered."""
        with self._lock:
            self._closed = True
            left, self._steers = self._steers, []
            return left


__all__ = ["Steer", "SteerInbox"]
