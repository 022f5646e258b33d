"""What an agent reports while a turn runs, as typed values passed to a listener callback."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from agent.outcome import ExitReason, TurnStatus
from agent.provider.errors import ProviderError
from agent.provider.types import ChatMessage, Usage
from agent.steering import Steer
from agent.stops import StopRequest
from agent.usage import TokenUsage


@dataclass(frozen=True, slots=True)
class ModelCallStarted:
    """A request to the model server is about to be sent (``iteration`` counts from 1)."""

    iteration: int


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of the reply as it streams: visible ``text`` and/or ``reasoning``.

    Attributes:
        text: visible reply text.
        reasoning: reasoning text.
        pieces: how many stream events were joined into this one (a model server sends about
            one token per event, so this counts tokens received).
    """

    text: str = ""
    reasoning: str = ""
    pieces: int = 1


@dataclass(frozen=True, slots=True)
class Retrying:
    """The server asked to wait (429 / 503); the turn sleeps ``delay_s`` seconds, stoppably."""

    delay_s: float
    message: str


@dataclass(frozen=True, slots=True)
class ToolStarted:
    """A tool call is about to run (after its approval, if it needed one)."""

    call_id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """Output of a running tool call, as it arrives (decoded text)."""

    call_id: str
    text: str


@dataclass(frozen=True, slots=True)
class ToolCompleted:
    """A tool call has its one result.

    The gateway's ``tool.complete`` payload is this event with its turn id
    (:class:`contract.events.ToolComplete` extends it), so the result's fields are declared
    once.

    Attributes:
        call_id: the call.
        name: the tool.
        content: the text the model sees (truncated with a marker when long).
        is_error: True for a failed, declined or stopped call.
        exit_code: a command's exit status, when it ran to its end.
        stopped_by: the issuer's party in words (``stopped by the user``...), when a stop cut it.
        children_ended: child processes the call's cleanup ended.
    """

    call_id: str
    name: str
    content: str
    is_error: bool
    exit_code: int | None = None
    stopped_by: str | None = None
    children_ended: int = 0


@dataclass(frozen=True, slots=True)
class SteerDelivered:
    """A steer reached the turn at a model-call boundary: it is now a user message of the
    transcript, right after what the turn streamed so far, and the next request carries it.

    Attributes:
        steer_id: the steer.
        text: its text, as given.
        issuer: ``user`` or ``system`` (a background child agent's answer).
        surface: where it came from.
    """

    steer_id: str
    text: str
    issuer: str
    surface: str

    @classmethod
    def of(cls, steer: Steer) -> SteerDelivered:
        """The event of a delivered ``steer``."""
        stop = steer.stop
        return cls(steer.steer_id, steer.text, stop.issuer.value, stop.surface.value)


AgentEvent = (
    ModelCallStarted
    | TextDelta
    | Retrying
    | ToolStarted
    | ToolOutput
    | ToolCompleted
    | SteerDelivered
)
AgentListener = Callable[[AgentEvent], None]


@dataclass(slots=True)
class TurnTimings:
    """Measured times of one turn, in seconds of ``time.monotonic()``.

    Attributes:
        started_at: the turn's worker began.
        first_token_at: the first delta arrived (None if none did).
        stop_requested_at: the first hard stop was made (None without a stop).
        connection_closed_at: the turn's connection was closed after the stop or the end: a
            stop's thread shut its socket down then, or the turn's client was closed.
        ended_at: the agent returned.
    """

    started_at: float
    first_token_at: float | None = None
    stop_requested_at: float | None = None
    connection_closed_at: float | None = None
    ended_at: float | None = None

    @property
    def stop_to_closed_ms(self) -> float | None:
        """Milliseconds from the stop to the provider connection being closed, or None."""
        if self.stop_requested_at is None or self.connection_closed_at is None:
            return None
        return max(0.0, (self.connection_closed_at - self.stop_requested_at) * 1000.0)


@dataclass(frozen=True, slots=True)
class StoppedTool:
    """The tool call a stop ended, and how long its process took to go.

    Attributes:
        name: the tool (``shell``, ``read_file``...).
        pid: the process (group) it ran, or None when it ran none (a file tool, an approval
            prompt).
        ended_ms: milliseconds from the stop to that process group being gone, or None.
        signals: the signals it took, in order (``("SIGTERM",)``, ``("SIGTERM", "SIGKILL")``).
    """

    name: str
    pid: int | None = None
    ended_ms: float | None = None
    signals: tuple[str, ...] = ()


@dataclass(slots=True)
class TurnResult:
    """The one terminal outcome of a turn.

    Attributes:
        status: ``completed``, ``interrupted``, ``failed`` or ``max_iterations``.
        exit_reason: ``completed``, ``interrupted_by_user``, ``interrupted_by_system(<surface>)``,
            ``failed(<error class>)`` or ``max_iterations(<n>)`` (see :mod:`agent.outcome`).
        text: the assistant's visible reply (partial when interrupted or failed).
        reasoning: the reasoning text streamed, if any.
        messages: the messages this turn adds to the transcript, in order (the assistant reply
            is included when it has any text, marked partial by ``partial``).
        partial: True when the reply was cut short.
        stop: the first hard stop, when one ended the turn.
        late_stops: hard stops that arrived after the first one (recorded, not booked).
        error: a one-line message for a failed turn.
        failure: the typed error that failed the turn (e.g. ``RequestTooLarge`` when nothing
            could be sent, ``ContextOverflow`` with the server's counts), if any.
        usage: the last usage the server reported (tokens).
        usage_total: every request of the turn summed (see :mod:`agent.usage`).
        timings: measured times.
        children_ended: child processes of the turn's tools that the turn ended.
        iterations: model calls made.
        stopped_tool: the tool call running when the stop came, if one was (then no model
            request was open: ``timings`` has no connection close for the stop).
        undelivered: steers the turn took but never delivered (it was stopped, failed, or ran
            out of model calls first), in the order they came; the host runs them as prompts.
        finish_reason: why the server ended the last reply of a completed turn (``stop``,
            ``length`` when it was cut at its token limit...), None if it did not say.
    """

    status: TurnStatus
    exit_reason: ExitReason
    text: str
    reasoning: str = ""
    messages: list[ChatMessage] = field(default_factory=list)
    partial: bool = False
    stop: StopRequest | None = None
    late_stops: list[StopRequest] = field(default_factory=list)
    error: str | None = None
    failure: ProviderError | None = None
    usage: Usage | None = None
    usage_total: TokenUsage = field(default_factory=TokenUsage)
    timings: TurnTimings | None = None
    children_ended: int = 0
    iterations: int = 0
    stopped_tool: StoppedTool | None = None
    undelivered: list[Steer] = field(default_factory=list)
    finish_reason: str | None = None
