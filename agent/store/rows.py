"""Typed rows of the session store, and the values callers pass in.

Times named ``*_at`` are wall-clock unix seconds (``time.time()``, REAL); durations named
``*_ms`` are milliseconds; token counts are tokens. A row's field names are its table's column
names: the SQLite store selects a row's fields by name and builds it by position.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from agent.events import TurnResult
from agent.outcome import NOT_SENT_PREFIX as NOT_SENT_PREFIX
from agent.provider.types import ChatMessage, Role, ToolCall
from agent.stops import StopRequest
from agent.usage import TokenUsage

ROLES: frozenset[str] = frozenset({"system", "user", "assistant", "tool"})

CRASH_EXIT_REASON = "failed(Crash)"
"""Exit reason of a turn found open on start-up whose owning process is gone."""

RUNNING = "running"
"""``TurnRow.status`` of a turn that has not ended yet."""

NOT_SENT_CRASH_ERROR = NOT_SENT_PREFIX + "the desk stopped before it ran"
"""``TurnRow.error`` of a queued prompt found on start-up whose owning process is gone."""


@dataclass(frozen=True, slots=True)
class SessionRow:
    """One durable conversation.

    Attributes:
        id: the session id.
        title: shown in lists.
        model: the model name the session talks to.
        cwd: the working directory tools run in.
        created_at: unix seconds.
        updated_at: unix seconds of the last change (message, turn, rename).
        compression_cooldown_until: unix seconds before which automatic compression waits, or
            None.
        compression_cooldown_step: how many failed compressions in a row (0 = no cooldown).
        last_error: the last error shown for this session, or None.
    """

    id: str
    title: str
    model: str
    cwd: str
    created_at: float
    updated_at: float
    compression_cooldown_until: float | None
    compression_cooldown_step: int
    last_error: str | None


@dataclass(frozen=True, slots=True)
class MessageRow:
    """One transcript message as stored.

    Attributes:
        id: row id (unique over the database).
        session_id: the session.
        position: append order in the session, 0, 1, 2... without gaps.
        order_key: where the message sits in the active transcript; equals ``position`` except
            for a compression summary, which takes the place of the first message it replaced.
        role: ``system``, ``user``, ``assistant`` or ``tool``.
        content: the text.
        reasoning: reasoning text shown with an assistant reply (never sent back), or None.
        tool_calls: calls made by an assistant message.
        tool_call_id: for a ``tool`` message, the call it answers.
        token_estimate: approximate size in tokens.
        active: False once a compression archived it (archived rows are never deleted).
        archived_by: id of the compression attempt that archived it, or None.
        partial: True for a reply cut short by a stop, a failure or a crash.
        turn_id: the turn that added it, or None.
        created_at: unix seconds.
    """

    id: int
    session_id: str
    position: int
    order_key: int
    role: Role
    content: str
    reasoning: str | None
    tool_calls: tuple[ToolCall, ...]
    tool_call_id: str | None
    token_estimate: int
    active: bool
    archived_by: int | None
    partial: bool
    turn_id: str | None
    created_at: float

    def to_chat(self) -> ChatMessage:
        """The message as sent to the model."""
        return ChatMessage(
            role=self.role,
            content=self.content,
            tool_calls=self.tool_calls,
            tool_call_id=self.tool_call_id,
        )


@dataclass(frozen=True, slots=True)
class TurnRow:
    """One turn and, once ended, its one terminal outcome.

    Attributes:
        id: the turn id.
        session_id: the session.
        prompt: the person's text.
        owner: the process that ran it (``host:pid:start``), used by crash recovery.
        started_at: unix seconds.
        ended_at: unix seconds, or None while it runs.
        status: ``running`` until closed; then ``completed``, ``interrupted``, ``failed`` or
            ``max_iterations``.
        exit_reason: the exit reason (see DESIGN.md), or None while it runs.
        stop_issuer: ``user`` or ``system`` when a stop ended it.
        stop_surface: the stop's surface.
        stop_reason: the stop's human text.
        prompt_tokens: tokens the server reported for the last request.
        completion_tokens: tokens the server reported for the last request.
        stop_closed_ms: milliseconds from the stop to the provider connection closing.
        stop_exited_ms: milliseconds from the stop to the worker having exited.
        children_ended: how many child processes of the turn's tools the turn ended.
        error: one line for a failed turn.
        draft: the streamed reply text last checkpointed while the turn ran (None once closed).
        parent_turn_id: for a child agent's turn, the turn whose ``delegate`` call started it
            (None for a turn of the session itself).
        reply: for a child agent's turn, its final reply text once closed (its messages are
            not part of the session's transcript); None otherwise.
        usage_requests: model requests the turn made (None: saved before desk counted them).
        usage_prompt: prompt tokens over all of them.
        usage_completion: completion tokens over all of them.
        usage_cached: prompt tokens the server reused from its cache.
        usage_estimated: how many of the requests are counted by desk's estimate.
        model: the model the turn ran with (None: saved before desk kept it, or not given).
        calls: while the turn is open, its tool calls as last saved (JSON, see
            :mod:`agent.store.calls`); None once it is closed, except for a child agent's
            turn closed by crash recovery (they are not the session's messages).
        finish_reason: how the server ended the closed turn's last reply (``stop``, ``length``
            when it cut it at its token limit...), or None (not known, or not saved then).
        dismissed: for a prompt that was never sent, 1 once the person dismissed it (it is
            offered again no more); None otherwise.
        stop_tool: the tool call a stop ended, when one ran (None otherwise, and for turns
            saved before desk kept it); ``stop_tool_pid`` its process group, if it ran one, and
            ``stop_tool_ended_ms`` milliseconds from the stop to that group being gone.
    """

    id: str
    session_id: str
    prompt: str
    owner: str
    started_at: float
    ended_at: float | None
    status: str
    exit_reason: str | None
    stop_issuer: str | None
    stop_surface: str | None
    stop_reason: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    stop_closed_ms: float | None
    stop_exited_ms: float | None
    children_ended: int | None
    error: str | None
    draft: str | None
    parent_turn_id: str | None = None
    reply: str | None = None
    usage_requests: int | None = None
    usage_prompt: int | None = None
    usage_completion: int | None = None
    usage_cached: int | None = None
    usage_estimated: int | None = None
    model: str | None = None
    calls: str | None = None
    finish_reason: str | None = None
    dismissed: int | None = None
    stop_tool: str | None = None
    stop_tool_pid: int | None = None
    stop_tool_ended_ms: float | None = None

    @property
    def usage(self) -> TokenUsage | None:
        """Every request of the turn summed, or None when it was saved without counts."""
        if self.usage_requests is None:
            return None
        return TokenUsage(
            self.usage_requests,
            self.usage_prompt or 0,
            self.usage_completion or 0,
            self.usage_cached or 0,
            self.usage_estimated or 0,
        )

    @property
    def is_open(self) -> bool:
        """True while the turn has no terminal outcome."""
        return self.ended_at is None

    @property
    def not_sent(self) -> bool:
        """True for a prompt never sent to the model: one that waited in the queue and was
        closed (:attr:`never_ran`), or one that ran and was refused as too large."""
        return self.error is not None and self.error.startswith(NOT_SENT_PREFIX)

    @property
    def never_ran(self) -> bool:
        """True for a queued prompt closed without ever running: a stop dropped it (a quit, a
        system stop) or the desk crashed before it ran. A frontend offers it again on resume;
        a prompt refused as too large ran, and its text came back to the person then."""
        return self.not_sent and (
            self.stop_issuer is not None or self.error == NOT_SENT_CRASH_ERROR
        )


@dataclass(frozen=True, slots=True)
class QueuedPromptRow:
    """A prompt waiting in a session's queue behind the running turn (not a turn yet).

    Attributes:
        turn_id: the turn id the gateway gave it; its turn row gets the same id.
        session_id: the session.
        prompt: the person's text.
        owner: the process whose queue holds it (``host:pid:start``), used by crash recovery.
        queued_at: unix seconds; never earlier than the session's previous queued prompt, so
            ``(queued_at, rowid)`` is queue order.
    """

    turn_id: str
    session_id: str
    prompt: str
    owner: str
    queued_at: float


@dataclass(frozen=True, slots=True)
class TurnOutcome:
    """The terminal outcome written when a turn closes.

    Attributes:
        status: ``completed``, ``interrupted``, ``failed`` or ``max_iterations``.
        exit_reason: ``completed``, ``interrupted_by_user``, ``interrupted_by_system(<surface>)``,
            ``failed(<error class>)`` or ``max_iterations(<n>)``.
        ended_at: unix seconds; None means the store's clock at the close.
        stop_issuer: ``user``/``system`` when a stop ended the turn.
        stop_surface: the stop's surface.
        stop_reason: the stop's human text.
        prompt_tokens: tokens (server-reported).
        completion_tokens: tokens (server-reported).
        stop_closed_ms: milliseconds from the stop to the connection closing.
        stop_exited_ms: milliseconds from the stop to the worker exiting.
        children_ended: how many child processes of the turn's tools the turn ended.
        error: one line for a failed turn.
        reply: a child agent's final reply text, kept on its row (None for other turns).
        usage: every request of the turn summed (None: not counted).
        finish_reason: how the server ended the turn's last reply (``length``: cut at its
            token limit), or None.
        stop_tool: the tool call the stop ended, when one ran; ``stop_tool_pid`` its process
            group, ``stop_tool_ended_ms`` milliseconds from the stop to that group being gone.
    """

    status: str
    exit_reason: str
    ended_at: float | None = None
    stop_issuer: str | None = None
    stop_surface: str | None = None
    stop_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    stop_closed_ms: float | None = None
    stop_exited_ms: float | None = None
    children_ended: int | None = None
    error: str | None = None
    reply: str | None = None
    usage: TokenUsage | None = None
    finish_reason: str | None = None
    stop_tool: str | None = None
    stop_tool_pid: int | None = None
    stop_tool_ended_ms: float | None = None

    def __post_init__(self) -> None:
        if self.status == RUNNING or not self.status:
            raise ValueError(f"a closed turn cannot have status {self.status!r}")
        if not self.exit_reason:
            raise ValueError("a closed turn needs an exit reason")

    @classmethod
    def from_result(
        cls,
        result: TurnResult,
        *,
        stop_exited_ms: float | None = None,
        ended_at: float | None = None,
    ) -> TurnOutcome:
        """The outcome of an agent's :class:`TurnResult`.

        Args:
            result: the booked result.
            stop_exited_ms: milliseconds from the stop to the worker exit (the gateway measures).
            ended_at: unix seconds; None for the store's clock.
        """
        stop = result.stop
        usage = result.usage
        timings = result.timings
        tool = result.stopped_tool if stop is not None else None
        return cls(
            status=result.status,
            exit_reason=result.exit_reason,
            ended_at=ended_at,
            stop_issuer=stop.issuer.value if stop is not None else None,
            stop_surface=stop.surface.value if stop is not None else None,
            stop_reason=stop.reason if stop is not None else None,
            prompt_tokens=usage.prompt_tokens if usage is not None else None,
            completion_tokens=usage.completion_tokens if usage is not None else None,
            stop_closed_ms=timings.stop_to_closed_ms if timings is not None else None,
            stop_exited_ms=stop_exited_ms,
            children_ended=result.children_ended,
            error=result.error,
            usage=result.usage_total,
            finish_reason=result.finish_reason,
            stop_tool=tool.name if tool is not None else None,
            stop_tool_pid=tool.pid if tool is not None else None,
            stop_tool_ended_ms=tool.ended_ms if tool is not None else None,
        )

    @classmethod
    def stopped(cls, stop: StopRequest, *, error: str) -> TurnOutcome:
        """The outcome of a turn ``stop`` ended without a result from its worker (a queued
        prompt it dropped, or a worker that outlived the shutdown bound).

        Args:
            stop: the stop, booked as given (its exit reason, issuer, surface and reason).
            error: one line saying why there is no result (``not sent: ...``).
        """
        return cls(
            status="interrupted",
            exit_reason=stop.exit_reason(),
            stop_issuer=stop.issuer.value,
            stop_surface=stop.surface.value,
            stop_reason=stop.reason,
            error=error,
        )


@dataclass(frozen=True, slots=True)
class NewMessage:
    """A message to append, with what the wire format does not carry.

    Attributes:
        message: the chat message.
        partial: True for a reply cut short.
        reasoning: reasoning text shown with it, or None.
        token_estimate: tokens; None for :func:`estimate_tokens`.
    """

    message: ChatMessage
    partial: bool = False
    reasoning: str | None = None
    token_estimate: int | None = None


def turn_messages(result: TurnResult) -> list[NewMessage]:
    """The messages a turn adds, with the partial flag and reasoning on its last assistant reply.

    Args:
        result: the booked result (its ``messages`` exclude the user prompt, which
            ``start_turn`` already stored).
    """
    out = [NewMessage(m) for m in result.messages]
    for index in range(len(out) - 1, -1, -1):
        if out[index].message.role == "assistant":
            out[index] = NewMessage(
                out[index].message,
                partial=result.partial,
                reasoning=result.reasoning or None,
            )
            break
    return out


@dataclass(frozen=True, slots=True)
class Cooldown:
    """Automatic-compression back-off of a session.

    Attributes:
        until: unix seconds before which automatic compression waits, or None (no cooldown).
        step: failed attempts in a row (0, 1, 2, 3...), picks the next wait (60/300/900 s).
    """

    until: float | None
    step: int


@dataclass(frozen=True, slots=True)
class CheckpointRow:
    """What one file held before a turn first changed it (a row of ``checkpoint_files``).

    Attributes:
        session_id: the session.
        turn_id: the turn that changed the file (a child agent's changes are its root turn's).
        step: 1, 2, 3... per session, in the order turns first changed the workspace.
        path: the file's absolute path.
        before_data: its bytes before the turn, or None when it did not exist.
        after_sha: the SHA-256 (hex) of its bytes once the turn was done with it, "" when the
            turn left no file there, None when not known (the turn was cut short by a crash).
        undone: the turn's changes were undone (``/undo``).
        created_at: unix seconds.
    """

    session_id: str
    turn_id: str
    step: int
    path: str
    before_data: bytes | None
    after_sha: str | None
    undone: bool
    created_at: float


@dataclass(frozen=True, slots=True)
class LeaseRow:
    """The compression lease of a session: held by ``holder`` until ``expires_at`` (unix s)."""

    session_id: str
    holder: str
    acquired_at: float
    expires_at: float


@dataclass(frozen=True, slots=True)
class CompressionAttemptRow:
    """One compression attempt.

    Attributes:
        id: row id.
        session_id: the session.
        generation: 1, 2, 3... per session; a late attempt with an older generation changes
            nothing.
        holder: the lease holder that runs it.
        started_at: unix seconds.
        ended_at: unix seconds, or None while it runs.
        phase: the last phase reached (``acquire lease``, ``prepare``, ``summarize``, ``commit``,
            ``done``).
        outcome: ``committed``, ``cancelled``, ``failed``, ``timeout``, ``abandoned``...; None
            while it runs.
        tokens_in: tokens of the replaced middle.
        tokens_out: tokens of the summary.
        error: one line, or None.
        summary_message_id: the summary message row, once committed.
    """

    id: int
    session_id: str
    generation: int
    holder: str
    started_at: float
    ended_at: float | None
    phase: str
    outcome: str | None
    tokens_in: int | None
    tokens_out: int | None
    error: str | None
    summary_message_id: int | None


def tool_calls_to_json(calls: tuple[ToolCall, ...]) -> str | None:
    """The OpenAI ``tool_calls`` array as JSON text, or None when there are none."""
    if not calls:
        return None
    return json.dumps([call.to_wire() for call in calls], ensure_ascii=False)


def tool_calls_from_json(text: str | None) -> tuple[ToolCall, ...]:
    """Parse what :func:`tool_calls_to_json` wrote.

    Raises:
        ValueError: when the text is not such an array.
    """
    if not text:
        return ()
    data = json.loads(text)
    if not isinstance(data, list):
        raise ValueError("tool_calls is not a JSON array")
    try:
        return tuple(
            ToolCall(str(e["id"]), str(e["function"]["name"]), str(e["function"]["arguments"]))
            for e in data
        )
    except (KeyError, TypeError) as exc:
        raise ValueError(f"tool_calls element without {exc}") from exc
