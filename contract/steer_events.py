"""The events of steering and delegation: a steer delivered, a child agent started and ended.

A child agent's own activity arrives as the usual turn events (``message.delta``,
``turn.state``, ``tool.start``, ``approval.request``...) with the child's ``turn_id``; these
three say where it sits: ``child.start`` names its parent, ``child.complete`` is its one
terminal outcome (a child has no ``message.start`` or ``message.complete``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from agent.outcome import ExitReason, TurnStatus
from agent.usage import TokenUsage
from contract.envelope import Payload, StopReceipt
from contract.kinds import ChildDelivery


@dataclass(frozen=True, slots=True)
class PromptSteered(Payload):
    """A steer reached its turn at a model-call boundary: from here on it is a user message of
    the transcript, after what the turn streamed so far, and the next request carries it.

    Attributes:
        turn_id: the turn (or child agent) it was delivered to.
        steer_id: the steer (``prompt.steer``'s result; a background child's answer has the
            child's ``turn_id``).
        text: its text, as given.
        issuer: ``user``, or ``system`` for a background child agent's answer.
        surface: where it came from (``desk.key``, ``api.steer``, ``delegate.result``...).
    """

    TYPE: ClassVar[str] = "prompt.steered"
    turn_id: str
    steer_id: str
    text: str
    issuer: str
    surface: str


@dataclass(frozen=True, slots=True)
class ChildStarted(Payload):
    """A ``delegate`` call started a child agent; its events carry its own ``turn_id``.

    Attributes:
        turn_id: the child's turn id (stop it alone with ``session.interrupt`` and this id).
        parent_turn_id: the turn (or child) whose ``delegate`` call started it.
        call_id: that ``delegate`` call.
        task: what it was asked to do.
        background: true when the parent goes on without waiting for it.
        depth: 1 for a child of a session's turn, 2 for that child's child...
    """

    TYPE: ClassVar[str] = "child.start"
    turn_id: str
    parent_turn_id: str
    call_id: str
    task: str
    background: bool
    depth: int


@dataclass(frozen=True, slots=True)
class ChildCompleted(Payload):
    """A child agent's one terminal outcome, saved before it is sent.

    Attributes:
        turn_id: the child.
        parent_turn_id: its parent turn.
        status: ``completed``, ``interrupted``, ``failed`` or ``max_iterations``.
        exit_reason: as for ``message.complete`` (a stop of its parent reaches it with the
            same issuer and surface).
        text: its final answer (partial when stopped or failed).
        delivery: how the answer reached the parent: ``tool_result``, ``steer`` or ``note``.
        stop: the receipt of the stop that ended it, if one did.
        error: one line for a failed child.
        prompt_tokens: prompt size the server reported for its last request (tokens).
        completion_tokens: reply size the server reported (tokens).
        elapsed_s: seconds from its start to its end.
        undelivered: ids of steers (its own children's answers) it ended before delivering.
        session_usage: the session's requests summed now, this child's included (None: not
            known): a background child that outlived its turn adds to it after that turn's
            ``message.complete``.
    """

    TYPE: ClassVar[str] = "child.complete"
    turn_id: str
    parent_turn_id: str
    status: TurnStatus
    exit_reason: ExitReason
    text: str
    delivery: ChildDelivery
    stop: StopReceipt | None = None
    error: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    elapsed_s: float = 0.0
    undelivered: tuple[str, ...] = ()
    session_usage: TokenUsage | None = None


__all__ = ["ChildCompleted", "ChildStarted", "PromptSteered"]
