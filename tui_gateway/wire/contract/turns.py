"""Params and results of the methods that run, stop and answer a session's turns.

``prompt.submit``, ``prompt.steer``, ``prompt.remove``, ``prompt.edit``, ``session.queue``,
``session.interrupt``,
``session.compress``, ``compression.cancel``, ``approval.respond`` and ``session.agents``. Each
that stops (or steers) carries one :class:`~tui_gateway.wire.contract.stop.StopParams`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from contract.results import ChildInfo, QueuedPromptInfo
from tui_gateway.wire.contract.stop import StopParams


@dataclass(frozen=True, slots=True)
class PromptSubmitParams:
    """Params of ``prompt.submit``.

    Attributes:
        session_id: the session.
        text: the prompt (not empty; at most the gateway's ``max_prompt_chars``).
        stop: "stop and send": hard-stop the running turn with this stop (queued prompts are
            kept) and run this prompt next, ahead of them; null queues it as usual.
        entered_at: when the key that sent it (an Enter) was made, in ``CLOCK_MONOTONIC``
            seconds of the frontend's host; a ``session.interrupt`` keyed after it stops this
            turn even when it reached the gateway first. Null: no key sent it.
    """

    session_id: str
    text: str
    stop: StopParams | None = None
    entered_at: float | None = None


@dataclass(frozen=True, slots=True)
class PromptSteerParams:
    """Params of ``prompt.steer``: text for the running turn, and who steers.

    Attributes:
        session_id: the session.
        text: what to add (not empty; at most the gateway's ``max_prompt_chars``).
        stop: the soft interrupt: who steers, from where (a person's surface, e.g.
            ``desk.key``, ``api.steer``), and why.
    """

    session_id: str
    text: str
    stop: StopParams


@dataclass(frozen=True, slots=True)
class SessionAgentsParams:
    """Params of ``session.agents``.

    Attributes:
        session_id: the session.
    """

    session_id: str


@dataclass(frozen=True, slots=True)
class SessionAgentsResult:
    """Result of ``session.agents``.

    Attributes:
        agents: the session's child agents, live and ended, in the order they started.
    """

    agents: list[ChildInfo]


@dataclass(frozen=True, slots=True)
class PromptRemoveParams:
    """Params of ``prompt.remove``.

    Attributes:
        session_id: the session.
        turn_id: the queued prompt's turn id (from ``prompt.submit``).
    """

    session_id: str
    turn_id: str


@dataclass(frozen=True, slots=True)
class PromptRemoveResult:
    """Result of ``prompt.remove``.

    Attributes:
        removed: false when the prompt was not queued any more (it runs, or it ended).
    """

    removed: bool


@dataclass(frozen=True, slots=True)
class SessionQueueParams:
    """Params of ``session.queue``.

    Attributes:
        session_id: the session.
    """

    session_id: str


@dataclass(frozen=True, slots=True)
class SessionQueueResult:
    """Result of ``session.queue``.

    Attributes:
        prompts: the prompts waiting, in the order they will run.
    """

    prompts: list[QueuedPromptInfo]


@dataclass(frozen=True, slots=True)
class PromptEditParams:
    """Params of ``prompt.edit``.

    Attributes:
        session_id: the session.
        turn_id: the queued prompt's turn id (from ``prompt.submit``).
        text: its new text (not empty; at most the gateway's ``max_prompt_chars``).
    """

    session_id: str
    turn_id: str
    text: str


@dataclass(frozen=True, slots=True)
class PromptEditResult:
    """Result of ``prompt.edit``.

    Attributes:
        edited: false when the prompt was not queued any more (it runs, or it ended), or is a
            queued ``/compress``.
    """

    edited: bool


@dataclass(frozen=True, slots=True)
class SessionInterruptParams:
    """Params of ``session.interrupt``: which turn to stop, and the stop.

    Attributes:
        session_id: the session.
        stop: who stops the turn, from where, and why.
        turn_id: stop only this turn; when another turn runs, nothing happens.
        keyed_at: a person's stop key: when it was made, in ``CLOCK_MONOTONIC`` seconds of the
            frontend's host (the clock of ``prompt.submit``'s ``entered_at``). Without
            ``turn_id`` it stops what runs unless that prompt was entered after the key; when
            nothing runs it is kept for the submit of a prompt entered before the key, which
            is then stopped at once. Null: stop what runs now.
    """

    session_id: str
    stop: StopParams
    turn_id: str | None = None
    keyed_at: float | None = None


@dataclass(frozen=True, slots=True)
class SessionInterruptResult:
    """Result of ``session.interrupt``.

    Attributes:
        turn_id: the turn the stop was sent to, or null when nothing ran.
    """

    turn_id: str | None


@dataclass(frozen=True, slots=True)
class SessionCompressParams:
    """Params of ``session.compress``.

    Attributes:
        session_id: the session.
        focus: what the summary should keep in view (``/compress FOCUS``), or null.
    """

    session_id: str
    focus: str | None = None


@dataclass(frozen=True, slots=True)
class CompressionCancelParams:
    """Params of ``compression.cancel``: the session whose compression stops, and the stop.

    Attributes:
        session_id: the session.
        stop: who cancels the compression, from where, and why.
    """

    session_id: str
    stop: StopParams


@dataclass(frozen=True, slots=True)
class CompressionCancelResult:
    """Result of ``compression.cancel``.

    Attributes:
        cancelled: false when no compression was running before its commit.
    """

    cancelled: bool


@dataclass(frozen=True, slots=True)
class ApprovalRespondParams:
    """Params of ``approval.respond``.

    Attributes:
        session_id: the session.
        request_id: from the ``approval.request`` event.
        decision: ``once``, ``always`` (this tool, for the rest of the session) or ``deny``.
    """

    session_id: str
    request_id: str
    decision: Literal["once", "always", "deny"]


@dataclass(frozen=True, slots=True)
class ApprovalRespondResult:
    """Result of ``approval.respond``.

    Attributes:
        accepted: false when the prompt is no longer pending (answered, or its turn stopped).
    """

    accepted: bool
