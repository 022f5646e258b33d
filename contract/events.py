"""The gateway's events: one typed, versioned payload dataclass per event type.

Every event reaches subscribers as a :class:`GatewayEvent` envelope with a per-session monotonic
``seq`` (the envelope and the :class:`Payload` base live in :mod:`contract.envelope` and are
re-exported here). ``message.delta`` events may be coalesced; every other (control) event is
delivered once, in order.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import ClassVar

from agent.compression.status import CompressionPhase, CompressionStatus
from agent.events import ToolCompleted
from agent.outcome import ExitReason, TurnStatus
from agent.usage import TokenUsage
from contract.envelope import PROTOCOL_VERSION, GatewayEvent, Payload, StopReceipt
from contract.kinds import TurnActivity
from contract.mcp_events import McpServerChanged
from contract.server_events import ServerState, ServerStatus
from contract.steer_events import ChildCompleted, ChildStarted, PromptSteered


@dataclass(frozen=True, slots=True)
class SessionCreated(Payload):
    """A session was created (``title`` may be empty until the first prompt names it)."""

    TYPE: ClassVar[str] = "session.created"
    title: str
    model: str


@dataclass(frozen=True, slots=True)
class SessionEvicted(Payload):
    """The session left the gateway's live set (its running turn, if any, was stopped first)."""

    TYPE: ClassVar[str] = "session.evicted"
    reason: str


@dataclass(frozen=True, slots=True)
class StoreFailed(Payload):
    """Saving the session failed for good (``action`` says what); it goes on in memory only,
    and what it had not saved is in the file ``unsaved`` ("" when none could be written)."""

    TYPE: ClassVar[str] = "session.store_error"
    action: str
    message: str
    unsaved: str = ""


@dataclass(frozen=True, slots=True)
class StoreWaiting(Payload):
    """The session's writes wait for the database (``waiting``), or are all written now.

    Nothing is dropped while it waits: the writes are kept in order and tried again.
    ``message`` is one line (why it waits, or ``saved``).
    """

    TYPE: ClassVar[str] = "session.store_waiting"
    waiting: bool
    message: str


@dataclass(frozen=True, slots=True)
class PromptQueued(Payload):
    """A prompt arrived while a turn ran; it waits at ``position`` (1 = next)."""

    TYPE: ClassVar[str] = "prompt.queued"
    turn_id: str
    text: str
    position: int


@dataclass(frozen=True, slots=True)
class PromptDropped(Payload):
    """A queued prompt will never run (removed, or the gateway shut down); ``reason`` says why."""

    TYPE: ClassVar[str] = "prompt.dropped"
    turn_id: str
    text: str
    reason: str


@dataclass(frozen=True, slots=True)
class MessageStart(Payload):
    """A turn started: the user's ``prompt`` was sent and the assistant reply begins."""

    TYPE: ClassVar[str] = "message.start"
    turn_id: str
    prompt: str


@dataclass(frozen=True, slots=True)
class MessageDelta(Payload):
    """A piece of the streaming reply (may be the coalesced sum of several pieces)."""

    TYPE: ClassVar[str] = "message.delta"
    CONTROL: ClassVar[bool] = False
    turn_id: str
    text: str = ""
    reasoning: str = ""

    def merged(self, later: Payload) -> Payload | None:
        """Adjacent deltas of one turn join into one."""
        if not isinstance(later, MessageDelta) or later.turn_id != self.turn_id:
            return None
        return MessageDelta(self.turn_id, self.text + later.text, self.reasoning + later.reasoning)


@dataclass(frozen=True, slots=True)
class ToolStart(Payload):
    """A tool call starts running (after its approval, if it needed one)."""

    TYPE: ClassVar[str] = "tool.start"
    turn_id: str
    call_id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class ToolOutput(Payload):
    """Output of a running tool call (may be the coalesced sum of several pieces)."""

    TYPE: ClassVar[str] = "tool.output"
    CONTROL: ClassVar[bool] = False
    turn_id: str
    call_id: str
    text: str

    def merged(self, later: Payload) -> Payload | None:
        """Adjacent output of one call (of one turn: call ids repeat across turns) joins into
        one."""
        if (
            not isinstance(later, ToolOutput)
            or later.call_id != self.call_id
            or later.turn_id != self.turn_id
        ):
            return None
        return replace(self, text=self.text + later.text)


@dataclass(frozen=True, slots=True)
class ToolComplete(Payload, ToolCompleted):
    """A tool call's one result.

    Attributes:
        call_id: the call.
        name: the tool.
        content: what the model sees (truncated with a marker when long).
        is_error: failed, declined or stopped.
        exit_code: a command's exit status when it ran to its end.
        stopped_by: ``stopped by the user`` / ``stopped by the system: <reason>`` when a stop cut
            the call short.
        children_ended: child processes the call's cleanup ended.
        turn_id: the turn.
    """

    # The agent's ToolCompleted with the turn it belongs to: the result's fields are declared
    # once, there (the turn id comes last on the wire, a keyword when built by hand).
    TYPE: ClassVar[str] = "tool.complete"
    turn_id: str = field(kw_only=True)

    @classmethod
    def of(cls, turn_id: str, event: ToolCompleted) -> ToolComplete:
        """The payload of the agent's ``event`` in the turn ``turn_id``."""
        return cls(
            event.call_id,
            event.name,
            event.content,
            event.is_error,
            event.exit_code,
            event.stopped_by,
            event.children_ended,
            turn_id=turn_id,
        )


@dataclass(frozen=True, slots=True)
class ApprovalRequest(Payload):
    """A tool call waits for the person: answer with ``approval.respond`` (once/always/deny).

    Attributes:
        turn_id: the turn whose call waits.
        request_id: what ``approval.respond`` answers.
        tool: the tool.
        arguments: the call's JSON arguments, as the model sent them.
        reason: why a call asks that its tool alone would not (a file tool's path outside the
            workspace, resolved: ``read_file on /etc/hosts, outside the workspace /home/me/p``);
            "" when the tool always asks (``shell``, ``write_file``).
        preview_kind: what ``preview`` holds: ``diff`` (a unified diff from the file on disk to
            what a ``write_file`` writes), ``new_file`` (the first lines of a file that does
            not exist yet), or "" (nothing to show).
        preview: the diff or the new file's first lines, as read (not made safe to show).
        preview_note: the size of the change in one line (``+12 −3 lines · 2,345 → 2,410
            bytes``, ``new file · 85 lines · 3,210 bytes``), or why there is no diff.
    """

    TYPE: ClassVar[str] = "approval.request"
    turn_id: str
    request_id: str
    tool: str
    arguments: str
    reason: str = ""
    preview_kind: str = ""
    preview: str = ""
    preview_note: str = ""


@dataclass(frozen=True, slots=True)
class ApprovalResolved(Payload):
    """A pending approval ended: ``decision`` is ``once``, ``always`` or ``deny``; ``reason``
    says why when it was not the person's answer (e.g. ``stopped by the user``)."""

    TYPE: ClassVar[str] = "approval.resolved"
    turn_id: str
    request_id: str
    decision: str
    reason: str = ""


@dataclass(frozen=True, slots=True)
class TurnState(Payload):
    """The running turn's state changed.

    ``state`` is one of ``waiting`` (request sent, no byte yet), ``streaming``, ``retrying``,
    ``tool``, ``stopping``, ``compressing``; ``detail`` is a short human text (e.g. the retry
    reason).
    """

    TYPE: ClassVar[str] = "turn.state"
    turn_id: str
    state: TurnActivity
    detail: str = ""


@dataclass(frozen=True, slots=True)
class MessageComplete(Payload):
    """The turn's one terminal outcome.

    Attributes:
        turn_id: the turn.
        status: ``completed``, ``interrupted``, ``failed`` or ``max_iterations``.
        exit_reason: ``completed``, ``interrupted_by_user``, ``interrupted_by_system(<surface>)``,
            ``failed(<error class>)`` or ``max_iterations(<n>)``.
        text: the canonical reply text (partial when stopped or failed).
        stop: the receipt of the stop that ended the turn, if one did.
        error: one-line message for a failed turn.
        prompt_tokens: prompt size the server reported (tokens), if it did.
        completion_tokens: reply size the server reported (tokens), if it did.
        elapsed_s: seconds from the turn's start to its end.
        undelivered: ids of the steers the turn took but ended before delivering: the
            person's run next as prompts (a ``prompt.queued`` with that id as ``turn_id``
            follows, or a ``prompt.dropped`` after a system stop); a background child's answer
            stays a note (its card).
        usage: every model request of the turn summed (prompt, completion, cached tokens;
            requests the server reported nothing for counted by desk's estimate).
        session_usage: the session's requests summed so far, this turn and its child agents'
            included.
        cut_at_length: True when the server cut a completed turn's reply at its token limit
            (its stream ended with ``finish_reason`` ``length``): the reply is not whole.
    """

    TYPE: ClassVar[str] = "message.complete"
    turn_id: str
    status: TurnStatus
    exit_reason: ExitReason
    text: str
    stop: StopReceipt | None = None
    error: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    elapsed_s: float = 0.0
    undelivered: tuple[str, ...] = ()
    usage: TokenUsage | None = None
    session_usage: TokenUsage | None = None
    cut_at_length: bool = False

    def length_notice(self) -> str:
        """The line that says the reply was cut at its token limit, or "" when it was not."""
        return length_notice(self.completion_tokens) if self.cut_at_length else ""


def length_notice(completion_tokens: int | None) -> str:
    """The line under a reply the server cut at its token limit (live, and once resumed):
    ``⚠ cut at the reply's token limit (12 tokens)``; the count is left out when unknown."""
    size = f" ({completion_tokens} tokens)" if completion_tokens is not None else ""
    return f"{LENGTH_MARK}{size}"


LENGTH_MARK = "⚠ cut at the reply's token limit"
"""How the line under a reply cut at its token limit begins."""


@dataclass(frozen=True, slots=True)
class CompressionProgressed(Payload):
    """A compression's progress.

    Attributes:
        turn_id: the turn running it (a ``/compress`` turn, or a prompt turn that compresses
            first).
        phase: ``lease``, ``prepare``, ``summarize``, ``commit`` or ``done``.
        tokens_in: estimated tokens being summarised.
        tokens_out: summary tokens received so far.
        budget: most tokens the summary may have.
        elapsed_s: seconds since the attempt began.
    """

    TYPE: ClassVar[str] = "compression.progress"
    CONTROL: ClassVar[bool] = False
    turn_id: str
    phase: CompressionPhase
    tokens_in: int = 0
    tokens_out: int = 0
    budget: int = 0
    elapsed_s: float = 0.0

    def merged(self, later: Payload) -> Payload | None:
        """Within one phase only the newest counts matter; a phase change is always kept."""
        if (
            isinstance(later, CompressionProgressed)
            and later.turn_id == self.turn_id
            and later.phase == self.phase
        ):
            return later
        return None


@dataclass(frozen=True, slots=True)
class CompressionComplete(Payload):
    """A compression attempt's one outcome.

    Attributes:
        turn_id: the turn that ran it.
        status: ``committed``, ``cancelled``, ``failed``, ``refused``, ``busy`` or ``nothing``.
        message: one line for the person (e.g. ``compression cancelled``).
        before_tokens: estimated transcript tokens before.
        after_tokens: estimated transcript tokens after (equal unless committed).
        stop: the receipt of the stop that cancelled it, if one did.
    """

    TYPE: ClassVar[str] = "compression.complete"
    turn_id: str
    status: CompressionStatus
    message: str
    before_tokens: int
    after_tokens: int
    stop: StopReceipt | None = None


@dataclass(frozen=True, slots=True)
class ContextWindowKnown(Payload):
    """The session's context window, where the figure came from, and how full it is.

    Sent once the window is known (on a session's first turn, or as soon as it is created or
    resumed when the window was learned before), and after every turn and compression.

    Attributes:
        tokens: the window (tokens).
        source: ``configured`` (``context_window``), ``server`` (the window the server runs
            with), ``model`` (the model's training context) or ``assumed``.
        detail: where it was read, e.g. ``/props n_ctx`` ("" when configured or assumed).
        text: one short phrase for a status bar, e.g. ``window 2,048 from the server`` or
            ``8,192 assumed: set context_window``.
        used_tokens: what the next request carries before its prompt: the transcript and the
            tool definitions, by the session's calibrated count (tokens).
        chars_per_token: the session's characters per token (measured from the server's
            counts, or the default until then), for a frontend's own estimate of a prompt
            being typed.
        measured: True once the server has counted something for the session.
        after_turn: the turn whose end this count was taken at (the count sent just before
            its ``message.complete``): ``used_tokens`` includes that turn's prompt and what it
            added. "" for a count taken at any other moment: a turn running then is not in it
            yet (a frontend adds the running prompt, and its reply so far, itself).
    """

    TYPE: ClassVar[str] = "context.window"
    tokens: int
    source: str
    detail: str = ""
    text: str = ""
    used_tokens: int = 0
    chars_per_token: float = 3.0
    measured: bool = False
    after_turn: str = ""


@dataclass(frozen=True, slots=True)
class ConsoleOutput(Payload):
    """Output of a running console command (may be several pieces coalesced)."""

    TYPE: ClassVar[str] = "console.output"
    CONTROL: ClassVar[bool] = False
    command_id: str
    text: str

    def merged(self, later: Payload) -> Payload | None:
        """Adjacent output of one command joins into one."""
        if not isinstance(later, ConsoleOutput) or later.command_id != self.command_id:
            return None
        return replace(self, text=self.text + later.text)


@dataclass(frozen=True, slots=True)
class ConsoleComplete(Payload):
    """A console command's one outcome, sent once its worker has exited.

    Attributes:
        command_id: the command.
        line: the command line.
        status: ``ok``, ``error``, ``cancelled`` or ``timeout``.
        message: one line saying why, for anything but ``ok``.
        focus_session: a session the frontend should switch to (``/new``), else None.
        elapsed_s: seconds the command ran.
    """

    TYPE: ClassVar[str] = "console.complete"
    command_id: str
    line: str
    status: str
    message: str = ""
    focus_session: str | None = None
    elapsed_s: float = 0.0


@dataclass(frozen=True, slots=True)
class GatewayStopping(Payload):
    """The gateway is shutting down and waits for ``turns`` running turns (bounded): the
    sessions' turns and the child agents that run (a background one included)."""

    TYPE: ClassVar[str] = "gateway.stopping"
    turns: int
    timeout_s: float


EVENT_TYPES: tuple[type[Payload], ...] = (
    SessionCreated,
    SessionEvicted,
    StoreFailed,
    StoreWaiting,
    PromptQueued,
    PromptDropped,
    PromptSteered,
    MessageStart,
    MessageDelta,
    TurnState,
    ToolStart,
    ToolOutput,
    ToolComplete,
    ApprovalRequest,
    ApprovalResolved,
    MessageComplete,
    CompressionProgressed,
    CompressionComplete,
    ContextWindowKnown,
    ChildStarted,
    ChildCompleted,
    ConsoleOutput,
    ConsoleComplete,
    GatewayStopping,
    McpServerChanged,
    ServerStatus,
)
"""Every payload type the gateway emits."""

__all__ = [
    "ApprovalRequest",
    "ApprovalResolved",
    "ChildCompleted",
    "ChildStarted",
    "CompressionComplete",
    "CompressionProgressed",
    "ConsoleComplete",
    "ConsoleOutput",
    "EVENT_TYPES",
    "GatewayEvent",
    "GatewayStopping",
    "MessageComplete",
    "MessageDelta",
    "MessageStart",
    "McpServerChanged",
    "PROTOCOL_VERSION",
    "Payload",
    "PromptDropped",
    "PromptQueued",
    "PromptSteered",
    "ServerState",
    "ServerStatus",
    "SessionCreated",
    "SessionEvicted",
    "StopReceipt",
    "StoreFailed",
    "StoreWaiting",
    "ToolComplete",
    "ToolOutput",
    "ToolStart",
    "TurnState",
]
