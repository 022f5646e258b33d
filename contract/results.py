"""What the contract's methods return: typed, frozen results (their fields are the wire's)."""

from __future__ import annotations

from dataclasses import dataclass, field

from agent.usage import TokenUsage
from contract.envelope import StopReceipt
from contract.events import CompressionComplete


@dataclass(frozen=True, slots=True)
class ConsoleCommandInfo:
    """One command the gateway's console runs (``console.commands``).

    Attributes:
        name: the command word, without a leading ``/`` (``digest``, ``sessions``).
        usage: how it is typed, e.g. ``/new [TITLE]`` or ``digest PATH...``.
        summary: one line saying what it does.
        markdown: its output is Markdown (``digest``'s summaries): a frontend may render it.
    """

    name: str
    usage: str
    summary: str
    markdown: bool = False


@dataclass(frozen=True, slots=True)
class SubmitResult:
    """What ``prompt.submit`` did: the new ``turn_id``, and whether it waits in the queue."""

    turn_id: str
    queued: bool


@dataclass(frozen=True, slots=True)
class QueuedPromptInfo:
    """One prompt waiting in a session's queue (``session.queue``).

    Attributes:
        turn_id: its turn id (``prompt.remove`` and ``prompt.edit`` take it).
        text: the prompt, or ``/compress [focus]`` for a queued compression.
        position: its place, 1 runs next.
        editable: a prompt (``prompt.edit`` takes it), not a queued compression.
    """

    turn_id: str
    text: str
    position: int
    editable: bool


@dataclass(frozen=True, slots=True)
class SteerResult:
    """What ``prompt.steer`` did.

    Attributes:
        turn_id: the running turn the text will reach at its next model-call boundary
            (``steered``), or the new turn it became (not ``steered``).
        steered: True when the running turn took it (a ``prompt.steered`` event follows when
            it is delivered); False when it became a normal prompt: nothing ran, or what runs
            is a ``/compress`` (the turn after it gets it), or the turn had taken its last
            boundary already.
        queued: for a prompt, whether it waits behind a running turn.
        steer_id: the steer's id (equal to ``turn_id`` when it became a prompt).
    """

    turn_id: str
    steered: bool
    queued: bool
    steer_id: str


@dataclass(frozen=True, slots=True)
class ChildInfo:
    """One child agent of a session (``session.agents``, ``/agents``).

    Attributes:
        turn_id: the child's turn id (``session.interrupt`` with it stops the child alone).
        parent_turn_id: the turn whose ``delegate`` call started it.
        task: what it was asked.
        background: the parent did not wait for it.
        depth: 1 for a child of a session's turn, 2 for its child...
        running: it runs now.
        status: its outcome's status once it ended ("" while it runs).
        exit_reason: its outcome's exit reason once it ended ("" while it runs).
        elapsed_s: seconds it has run (or ran).
    """

    turn_id: str
    parent_turn_id: str
    task: str
    background: bool
    depth: int
    running: bool
    status: str = ""
    exit_reason: str = ""
    elapsed_s: float = 0.0


@dataclass(frozen=True, slots=True)
class ChildCall:
    """One tool call a saved child agent made, with its result.

    Attributes:
        call_id: the provider's call id.
        name: the tool.
        arguments: the call's raw JSON arguments, as the model wrote them.
        result: what the child's model was given back (what became of a call desk stopped
            before it answered: "not run", or its result lost).
        is_error: the call failed, was declined or stopped.
    """

    call_id: str
    name: str
    arguments: str
    result: str
    is_error: bool = False


@dataclass(frozen=True, slots=True)
class ChildOutcome:
    """A saved child agent's turn, as a resumed session shows it.

    Attributes:
        turn_id: the child's turn id.
        parent_turn_id: the turn whose ``delegate`` call started it (a session's turn, or
            another child).
        task: what it was asked.
        status: ``completed``, ``interrupted``, ``failed``, ``max_iterations`` (``running``
            when the process that ran it is still running it).
        exit_reason: its exit reason ("" while it runs).
        reply: its final answer as saved ("" when it gave none).
        note: who stopped it or why it failed, as for a turn ("" when it completed).
        prompt_tokens: its last request's prompt size (tokens), if the server said.
        completion_tokens: its last reply's size (tokens), if the server said.
        calls: its own tool calls, in the order made (its card shows them, as it did live).
        stop: its stop's saved figures, when it was stopped (its live receipt), else None.
        elapsed_s: seconds from its start to its end, when both were saved.
    """

    turn_id: str
    parent_turn_id: str
    task: str
    status: str
    exit_reason: str
    reply: str = ""
    note: str = ""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    calls: tuple[ChildCall, ...] = ()
    stop: StopReceipt | None = None
    elapsed_s: float | None = None


@dataclass(frozen=True, slots=True)
class ShutdownReport:
    """What ``gateway.shutdown`` did.

    Attributes:
        turns_stopped: running turns hard-stopped as ``gateway.shutdown``.
        prompts_dropped: queued prompts that will never run.
        threads_left: names of worker threads still alive at the deadline (empty on success).
        elapsed_s: seconds the shutdown took.
        unsaved: files holding what could not be saved (the database stayed unavailable, or
            failed for good); empty when everything was saved.
    """

    turns_stopped: int
    prompts_dropped: int
    threads_left: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0
    unsaved: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """One line of ``session.list``.

    Attributes:
        session_id: the id.
        title: the title ("" until the first prompt names it).
        model: the model it talks to.
        updated_at: unix seconds of the last saved change, or None when never saved.
        live: held by the gateway now.
        running: a turn runs now.
    """

    session_id: str
    title: str
    model: str
    updated_at: float | None
    live: bool
    running: bool


@dataclass(frozen=True, slots=True)
class SavedToolCall:
    """One tool call of a saved assistant message.

    Attributes:
        call_id: the provider's call id (the ``tool`` message that answers it names it).
        name: the tool.
        arguments: the call's raw JSON arguments, as the model wrote them (may be invalid).
    """

    call_id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class TranscriptEntry:
    """One message of a resumed session, as a frontend shows it, or an event the session
    showed among its messages (``role`` ``event``), in its place.

    Attributes:
        role: ``system``, ``user``, ``assistant`` or ``tool``; ``event`` for an event that is
            not a message (its payload is in the member named after it: ``compression``).
        content: the text ("" for an event).
        partial: True for a reply that was cut short (stopped, failed, or a crash).
        tool_names: for an assistant message, the tools it called.
        tool_calls: for an assistant message, its calls with their arguments (the names of
            ``tool_names``, in the same order).
        tool_call_id: for a ``tool`` message, the call it answers ("" otherwise).
        note: on the last message of a turn that did not complete: who stopped it ("stopped
            by you", "stopped by the system: ..."), why it failed ("failed: ..."), or, for a
            queued prompt that never ran, why ("not sent: ..."); on the last message of a
            completed turn whose reply the server cut at its token limit, the line that says
            so (``contract.events.length_notice``: "⚠ cut at the reply's token limit ...").
        stop: beside ``note`` on a stopped turn: the stop's figures as they were measured, so
            a frontend can show the same receipt it showed live.
        summary: True for the summary a compression wrote in place of the messages it
            replaced (a ``user`` message whose first line is a marker, not something typed).
        steer: a user message that was a steer, delivered inside its turn (not a prompt).
        children: on the last message of a turn: the child agents it (and they) delegated
            to, in the order they started, with their outcomes.
        unsent: a prompt that waited in the queue and never ran (the desk quit, a crash, a
            system stop): a frontend may offer to send it again.
        dismissed: an ``unsent`` prompt the person dismissed (``prompt.remove``): offer it
            no more.
        turn_id: the turn the message belongs to ("" when it has none); ``prompt.remove``
            takes it to dismiss an ``unsent`` prompt.
        compression: for an ``event``: a compression's outcome, as ``compression.complete``
            told it live (its line goes where the live one was: after the prompt of the turn
            that compressed first, else after the messages there were when it ended).
        replaced: on a compression's ``summary``: the messages it replaced, as the store still
            keeps them, oldest first, each an entry like the others (a summary among them
            expanded into what it replaced in turn); empty when there are none to give.
    """

    role: str
    content: str
    partial: bool = False
    tool_names: tuple[str, ...] = ()
    tool_calls: tuple[SavedToolCall, ...] = ()
    tool_call_id: str = ""
    note: str = ""
    stop: StopReceipt | None = None
    summary: bool = False
    steer: bool = False
    children: tuple[ChildOutcome, ...] = ()
    unsent: bool = False
    dismissed: bool = False
    turn_id: str = ""
    compression: CompressionComplete | None = None
    replaced: tuple[TranscriptEntry, ...] = ()


@dataclass(frozen=True, slots=True)
class ResumedSession:
    """What ``session.resume`` returns: the session and its transcript, oldest first, and
    ``usage``: every model request of its turns summed (child agents' included; turns saved
    before desk counted usage add nothing; None from a gateway that does not count)."""

    session_id: str
    title: str
    model: str
    transcript: list[TranscriptEntry] = field(default_factory=list)
    usage: TokenUsage | None = None


@dataclass(frozen=True, slots=True)
class UndoResult:
    """What ``session.undo`` did: the workspace put back as it was before the last turn that
    changed it (and not undone yet).

    Attributes:
        undone: True when the turn's files are back as they were before it. False when there
            was nothing to undo (``turn_id`` is ""), or when the newest turn's files could not
            all be put back (``not_restored`` says why: a file changed outside desk since, and
            then nothing was written; or a write failed): that turn stays the next to undo.
        turn_id: the turn undone (or the one that could not be).
        prompt: its prompt (the first line, for the person to recognise it).
        diff: the unified diff it reverted ("" when every file already held its old text).
        restored: the files written back with what they held before the turn (a file the turn
            deleted included), relative to the workspace.
        removed: the files the turn created, removed, relative to the workspace.
        not_restored: one line per file left as it is, saying why (e.g. ``a.txt: changed
            outside desk since the turn``).
        remaining: how many turns can still be undone after this (the one not undone
            included).
    """

    undone: bool
    turn_id: str = ""
    prompt: str = ""
    diff: str = ""
    restored: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    not_restored: list[str] = field(default_factory=list)
    remaining: int = 0


@dataclass(frozen=True, slots=True)
class SessionDiff:
    """What ``session.diff`` returns: what the session's turns changed in the workspace (the
    turns undone left out), from the files as the session found them to now.

    Attributes:
        diff: the unified diff ("" when nothing differs).
        files: the files that differ, relative to the workspace.
        added: lines added.
        removed: lines removed.
    """

    diff: str
    files: list[str] = field(default_factory=list)
    added: int = 0
    removed: int = 0
