"""The methods that run, stop and answer a session's turns: params, results, declarations.

``prompt.submit``, ``prompt.steer``, ``prompt.remove``, ``prompt.edit``, ``session.queue``,
``session.interrupt``,
``session.compress``, ``compression.cancel``, ``approval.respond`` and ``session.agents``. Each
that stops (or steers) carries one :class:`~contract.methods.stop.StopParams`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from contract.methods.declare import Method
from contract.methods.stop import StopParams
from contract.ports import DeskGateway
from contract.results import ChildInfo, QueuedPromptInfo, SteerResult, SubmitResult


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
        turn_id: the queued prompt's turn id (from ``prompt.submit``), or the turn id of a
            prompt saved as not sent (``TranscriptEntry.turn_id`` of an ``unsent`` entry).
    """

    session_id: str
    turn_id: str


@dataclass(frozen=True, slots=True)
class PromptRemoveResult:
    """Result of ``prompt.remove``.

    Attributes:
        removed: false when the prompt was not queued any more (it runs, or it ended), nor
            a prompt saved as not sent that was still offered.
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


# -- the methods: name, params, result, what it does, and the call into the gateway --


def _submit(gateway: DeskGateway, p: PromptSubmitParams) -> SubmitResult:
    stop = p.stop.request() if p.stop is not None else None
    return gateway.prompt_submit(p.session_id, p.text, stop=stop, entered_at=p.entered_at)


PROMPT_SUBMIT = Method(
    "prompt.submit",
    PromptSubmitParams,
    SubmitResult,
    "Run the prompt as the session's next turn, or queue it behind the running one (a "
    "`prompt.queued` event says so). Its events follow as notifications. With `stop` "
    '("stop and send") the running turn is hard-stopped with it (queued prompts are kept) '
    "and this prompt runs next, ahead of them.",
    _submit,
)

PROMPT_STEER = Method(
    "prompt.steer",
    PromptSteerParams,
    SteerResult,
    "Give the running turn more input without stopping it (a soft interrupt): the text is "
    "delivered at its next model-call boundary, after the current stream or tool call, "
    "never cutting one, and becomes a user message there (a `prompt.steered` event shows "
    "where). During a compression it waits for the turn after it. When nothing runs, or a "
    "`/compress` runs, or the turn has taken its last boundary, it becomes a normal prompt "
    "(`steered` false); a turn that ends before delivering it runs it next as a prompt.",
    lambda g, p: g.prompt_steer(p.session_id, p.text, p.stop.request(hard=False)),
)

PROMPT_REMOVE = Method(
    "prompt.remove",
    PromptRemoveParams,
    PromptRemoveResult,
    "Remove a queued prompt before it runs (a `prompt.dropped` event follows), or dismiss a "
    "prompt saved as not sent (an `unsent` entry of `session.resume`): it is saved as "
    "dismissed, and later resumes show it with `dismissed` (no event).",
    lambda g, p: PromptRemoveResult(removed=g.prompt_remove(p.session_id, p.turn_id)),
)

PROMPT_EDIT = Method(
    "prompt.edit",
    PromptEditParams,
    PromptEditResult,
    "Replace the text of a queued prompt before it runs, keeping its turn id and its place "
    "in the queue (a `prompt.queued` event with the new text and its place follows).",
    lambda g, p: PromptEditResult(edited=g.prompt_edit(p.session_id, p.turn_id, p.text)),
)

SESSION_QUEUE = Method(
    "session.queue",
    SessionQueueParams,
    SessionQueueResult,
    "The prompts waiting in the session's queue, in the order they will run (a frontend "
    "that shows a session again lists them; `prompt.queued`, `message.start` and "
    "`prompt.dropped` keep it up to date from then on).",
    lambda g, p: SessionQueueResult(prompts=g.session_queue(p.session_id)),
)


def _interrupt(gateway: DeskGateway, p: SessionInterruptParams) -> SessionInterruptResult:
    stop = p.stop.request()
    turn = gateway.session_interrupt(p.session_id, stop, turn_id=p.turn_id, keyed_at=p.keyed_at)
    return SessionInterruptResult(turn_id=turn)


SESSION_INTERRUPT = Method(
    "session.interrupt",
    SessionInterruptParams,
    SessionInterruptResult,
    "Hard-stop the session's running turn, booked to the `stop`'s issuer and surface. "
    "Queued prompts stay queued. The turn ends with one `message.complete` whose "
    "`exit_reason` is `interrupted_by_user` for a user surface, "
    "`interrupted_by_system(<surface>)` otherwise. A stop key (`keyed_at`) stops what "
    "the session runs now, or the prompt whose submit was entered before it and is still "
    "in flight, whichever call reaches the gateway first; never a prompt entered after it.",
    _interrupt,
)

SESSION_COMPRESS = Method(
    "session.compress",
    SessionCompressParams,
    SubmitResult,
    "Compress the transcript now (`/compress`): runs on the session's worker like a turn "
    "(queued behind a running one), ignores the cooldown, reports `compression.progress` "
    "and ends with one `compression.complete` (no `message.complete`).",
    lambda g, p: g.session_compress(p.session_id, p.focus),
)

COMPRESSION_CANCEL = Method(
    "compression.cancel",
    CompressionCancelParams,
    CompressionCancelResult,
    "Hard-stop the session's running compression, and only it, booked to the `stop`'s "
    "issuer. Before commit admission everything is rolled back (after it, the commit "
    "completes and nothing is stopped). A `/compress` turn ends with it; a prompt turn "
    "that was compressing first goes on and sends its request when it fits without the "
    "compression, and otherwise ends with one line saying so (`session.interrupt` stops "
    "the turn, compression included).",
    lambda g, p: CompressionCancelResult(
        cancelled=g.compression_cancel(p.session_id, p.stop.request())
    ),
)

SESSION_AGENTS = Method(
    "session.agents",
    SessionAgentsParams,
    SessionAgentsResult,
    "The session's child agents (started by `delegate` tool calls), live and ended. Stop "
    "one alone with `session.interrupt` and its `turn_id`: its parent goes on.",
    lambda g, p: SessionAgentsResult(agents=g.session_agents(p.session_id)),
)

APPROVAL_RESPOND = Method(
    "approval.respond",
    ApprovalRespondParams,
    ApprovalRespondResult,
    "Answer a pending tool approval (`approval.request`).",
    lambda g, p: ApprovalRespondResult(
        accepted=g.approval_respond(p.session_id, p.request_id, p.decision)
    ),
)

METHODS: tuple[Method[Any, Any], ...] = (
    PROMPT_SUBMIT,
    PROMPT_STEER,
    PROMPT_REMOVE,
    PROMPT_EDIT,
    SESSION_QUEUE,
    SESSION_INTERRUPT,
    SESSION_COMPRESS,
    COMPRESSION_CANCEL,
    SESSION_AGENTS,
    APPROVAL_RESPOND,
)
"""This group's methods, in the order the reference lists them."""
