"""Steering: text added to a running turn, delivered at its next model-call boundary.

A steer is a soft interrupt. Its :class:`~agent.stops.StopRequest` (``hard=False``) stays what
every stop is, a value that says who asks, from where and why; the text rides beside it in a
:class:`Steer`. :meth:`agent.agent.Agent.steer` takes one from any thread and keeps it until the
turn reaches a boundary: the current stream ended (a text reply, or tool calls whose batch has
run) and the next request is not sent yet. It never cuts a stream, a tool call or a
compression; a hard stop is the only thing that aborts.

Where a steer lands in the transcript: as a ``user`` message right where it was delivered,
after the assistant's text reply or after the tool results of a tool-call round, and before the
next model call. Strict chat templates (Mistral's, Gemma's) refuse a ``user`` message right
after ``tool`` results, so :func:`bridged` puts a one-line assistant note between the two in
every request (the transcript keeps the steer as it happened).

A steer issued by the system (a background child agent's answer) never reads as the person's
words: :meth:`Steer.message` names where it came from.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

from agent.provider.types import ChatMessage
from agent.stops import Issuer, StopRequest, require_soft

STEER_BRIDGE = "(noted the tool results; there is more input before I go on)"
"""The assistant note a request carries between tool results and a steer after them."""


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
        the model never takes it for the person's words.
        """
        if self.stop.issuer is Issuer.USER:
            return ChatMessage(role="user", content=self.text)
        head = f"[{self.stop.reason}; not typed by the person]"
        return ChatMessage(role="user", content=f"{head}\n\n{self.text}")


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


def bridged(messages: Sequence[ChatMessage]) -> list[ChatMessage]:
    """The request's messages with :data:`STEER_BRIDGE` between tool results and a ``user``
    message right after them (the only place a steer breaks strict role alternation).

    Args:
        messages: the transcript as the request would send it.

    Returns:
        a new list; unchanged when no ``user`` message follows a ``tool`` message.
    """
    out: list[ChatMessage] = []
    for message in messages:
        if message.role == "user" and out and out[-1].role == "tool":
            out.append(ChatMessage(role="assistant", content=STEER_BRIDGE))
        out.append(message)
    return out


__all__ = ["STEER_BRIDGE", "Steer", "SteerInbox", "bridged"]
