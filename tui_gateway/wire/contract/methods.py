"""The contract's tables: every JSON-RPC method (params, result, what it does) and notification.

:mod:`tui_gateway.wire.dispatch` serves :data:`METHODS`, :class:`~tui_gateway.wire.client.
RemoteGateway` calls them, and ``docs/protocol.md`` and ``docs/protocol.schema.json`` are made
from these tables.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from contract.results import (
    ResumedSession,
    SessionDiff,
    ShutdownReport,
    SteerResult,
    SubmitResult,
    UndoResult,
)
from contract.server_events import ServerStatus
from tui_gateway.wire.contract.console import (
    ConsoleCancelParams,
    ConsoleCancelResult,
    ConsoleCommandsParams,
    ConsoleCommandsResult,
    ConsoleRunParams,
    ConsoleRunResult,
)
from tui_gateway.wire.contract.lifecycle import GatewayShutdownParams, Ready
from tui_gateway.wire.contract.limits import REPLAY_CAPACITY
from tui_gateway.wire.contract.server import ServerStatusParams
from tui_gateway.wire.contract.sessions import (
    EventsSinceParams,
    EventsSinceResult,
    SessionCreateParams,
    SessionCreateResult,
    SessionDeleteParams,
    SessionDeleteResult,
    SessionDiffParams,
    SessionListParams,
    SessionListResult,
    SessionRenameParams,
    SessionRenameResult,
    SessionResumeParams,
    SessionUndoParams,
    WireEvent,
)
from tui_gateway.wire.contract.turns import (
    ApprovalRespondParams,
    ApprovalRespondResult,
    CompressionCancelParams,
    CompressionCancelResult,
    PromptEditParams,
    PromptEditResult,
    PromptRemoveParams,
    PromptRemoveResult,
    PromptSteerParams,
    PromptSubmitParams,
    SessionAgentsParams,
    SessionAgentsResult,
    SessionCompressParams,
    SessionInterruptParams,
    SessionInterruptResult,
    SessionQueueParams,
    SessionQueueResult,
)
from tui_gateway.wire.contract.workspace import WorkspaceFilesParams, WorkspaceFilesResult


@dataclass(frozen=True, slots=True)
class Method:
    """One JSON-RPC method of the contract.

    Attributes:
        name: the wire name.
        params: the params dataclass.
        result: the result dataclass.
        summary: what it does, in a sentence or two.
        blocking: it may wait (bounded) on workers or the store; a stdio gateway runs it off its
            reader thread, so a stop sent meanwhile is never delayed behind it.
    """

    name: str
    params: type[Any]
    result: type[Any]
    summary: str
    blocking: bool = False


METHODS: tuple[Method, ...] = (
    Method(
        "session.create",
        SessionCreateParams,
        SessionCreateResult,
        "Create an empty live session. When the gateway holds too many, the least recently "
        "used one is evicted (its running turn is stopped as `session.evicted` first).",
        blocking=True,
    ),
    Method(
        "session.list",
        SessionListParams,
        SessionListResult,
        "Live and saved sessions, most recently used first.",
        blocking=True,
    ),
    Method(
        "session.resume",
        SessionResumeParams,
        ResumedSession,
        "Make a saved session live again and return its transcript (archived messages left out).",
        blocking=True,
    ),
    Method(
        "session.rename",
        SessionRenameParams,
        SessionRenameResult,
        "Rename a live or saved session.",
        blocking=True,
    ),
    Method(
        "session.delete",
        SessionDeleteParams,
        SessionDeleteResult,
        "Delete a session for good; its running turn is stopped first (the person asked: "
        "`interrupted_by_user`) and waited for (bounded).",
        blocking=True,
    ),
    Method(
        "session.undo",
        SessionUndoParams,
        UndoResult,
        "Put the workspace's files back as they were before the session's last turn that "
        "changed them (not undone yet; again: the one before), from the checkpoints in the "
        "session store. Returns the diff it reverted and the files it left as they are (changed "
        "outside desk since). Refused while a turn runs in the session.",
        blocking=True,
    ),
    Method(
        "session.diff",
        SessionDiffParams,
        SessionDiff,
        "What the session's turns changed in the workspace (undone turns left out), as one "
        "unified diff from the files as the session found them to now.",
        blocking=True,
    ),
    Method(
        "prompt.submit",
        PromptSubmitParams,
        SubmitResult,
        "Run the prompt as the session's next turn, or queue it behind the running one (a "
        "`prompt.queued` event says so). Its events follow as notifications. With `stop` "
        '("stop and send") the running turn is hard-stopped with it (queued prompts are kept) '
        "and this prompt runs next, ahead of them.",
    ),
    Method(
        "prompt.steer",
        PromptSteerParams,
        SteerResult,
        "Give the running turn more input without stopping it (a soft interrupt): the text is "
        "delivered at its next model-call boundary, after the current stream or tool call, "
        "never cutting one, and becomes a user message there (a `prompt.steered` event shows "
        "where). During a compression it waits for the turn after it. When nothing runs, or a "
        "`/compress` runs, or the turn has taken its last boundary, it becomes a normal prompt "
        "(`steered` false); a turn that ends before delivering it runs it next as a prompt.",
    ),
    Method(
        "prompt.remove",
        PromptRemoveParams,
        PromptRemoveResult,
        "Remove a queued prompt before it runs (a `prompt.dropped` event follows).",
    ),
    Method(
        "prompt.edit",
        PromptEditParams,
        PromptEditResult,
        "Replace the text of a queued prompt before it runs, keeping its turn id and its place "
        "in the queue (a `prompt.queued` event with the new text and its place follows).",
    ),
    Method(
        "session.queue",
        SessionQueueParams,
        SessionQueueResult,
        "The prompts waiting in the session's queue, in the order they will run (a frontend "
        "that shows a session again lists them; `prompt.queued`, `message.start` and "
        "`prompt.dropped` keep it up to date from then on).",
    ),
    Method(
        "session.interrupt",
        SessionInterruptParams,
        SessionInterruptResult,
        "Hard-stop the session's running turn, booked to the `stop`'s issuer and surface. "
        "Queued prompts stay queued. The turn ends with one `message.complete` whose "
        "`exit_reason` is `interrupted_by_user` for a user surface, "
        "`interrupted_by_system(<surface>)` otherwise. A stop key (`keyed_at`) stops what "
        "the session runs now, or the prompt whose submit was entered before it and is still "
        "in flight, whichever call reaches the gateway first; never a prompt entered after it.",
    ),
    Method(
        "session.compress",
        SessionCompressParams,
        SubmitResult,
        "Compress the transcript now (`/compress`): runs on the session's worker like a turn "
        "(queued behind a running one), ignores the cooldown, reports `compression.progress` "
        "and ends with one `compression.complete` (no `message.complete`).",
    ),
    Method(
        "compression.cancel",
        CompressionCancelParams,
        CompressionCancelResult,
        "Hard-stop the session's running compression, and only it, booked to the `stop`'s "
        "issuer. Before commit admission everything is rolled back (after it, the commit "
        "completes and nothing is stopped). A `/compress` turn ends with it; a prompt turn "
        "that was compressing first goes on and sends its request when it fits without the "
        "compression, and otherwise ends with one line saying so (`session.interrupt` stops "
        "the turn, compression included).",
    ),
    Method(
        "session.agents",
        SessionAgentsParams,
        SessionAgentsResult,
        "The session's child agents (started by `delegate` tool calls), live and ended. Stop "
        "one alone with `session.interrupt` and its `turn_id`: its parent goes on.",
    ),
    Method(
        "approval.respond",
        ApprovalRespondParams,
        ApprovalRespondResult,
        "Answer a pending tool approval (`approval.request`).",
    ),
    Method(
        "console.commands",
        ConsoleCommandsParams,
        ConsoleCommandsResult,
        "The commands this gateway's console runs, by name, with their usage and a summary "
        "(what a frontend offers for completion and help).",
    ),
    Method(
        "console.run",
        ConsoleRunParams,
        ConsoleRunResult,
        "Run a console command line on a console worker; output arrives as `console.output` "
        "events and the outcome as one `console.complete`.",
    ),
    Method(
        "console.cancel",
        ConsoleCancelParams,
        ConsoleCancelResult,
        "Drop a queued command, or hard-stop a running one, booked to the `stop`'s issuer.",
    ),
    Method(
        "server.status",
        ServerStatusParams,
        ServerStatus,
        "The model server's state as last found: `ready` (with the models it lists), "
        "`unreachable` or `refused` (with why, in one line), or `checking`. With `check` the "
        "gateway asks it now, and again with a back-off while it does not answer well; every "
        "change is a `server.status` event. While it is `unreachable` or `refused`, or does "
        "not list a session's model, `prompt.submit` is refused with that line.",
    ),
    Method(
        "workspace.files",
        WorkspaceFilesParams,
        WorkspaceFilesResult,
        "The workspace's files whose paths hold `query`'s characters in order, best first (for "
        "completing an `@` mention): git's list in a git repository (`.gitignore` respected), "
        "else a walk that skips hidden directories. A prompt's `@path` mentions are attached "
        "by `prompt.submit`.",
        blocking=True,
    ),
    Method(
        "session.events.since",
        EventsSinceParams,
        EventsSinceResult,
        f"Replay the session's events after `seq` from a bounded ring ({REPLAY_CAPACITY:,} "
        "events per session by default); `truncated` says when older ones were dropped. A client "
        "that saw a gap in `seq` can fetch what it missed.",
    ),
    Method(
        "gateway.shutdown",
        GatewayShutdownParams,
        ShutdownReport,
        "A system stop of everything (`gateway.shutdown`): queued prompts dropped, running turns "
        "and console commands hard-stopped, then a bounded wait for every worker. A stdio gateway "
        "exits after answering.",
        blocking=True,
    ),
)
"""Every method of the contract."""

METHODS_BY_NAME: dict[str, Method] = {m.name: m for m in METHODS}
"""Wire name -> method."""


@dataclass(frozen=True, slots=True)
class Notification:
    """A notification the gateway sends (never answered).

    Attributes:
        name: the wire name (the message's ``method``).
        params: the params dataclass.
        summary: when it is sent, and what it says.
    """

    name: str
    params: type[Any]
    summary: str


NOTIFICATIONS: tuple[Notification, ...] = (
    Notification(
        "gateway.ready",
        Ready,
        "Sent once, first, by a stdio gateway when it is ready for requests.",
    ),
    Notification(
        "event",
        WireEvent,
        "One gateway event (see Events), in order per session. Delta events (`message.delta`, "
        "`tool.output`, `console.output`, `compression.progress`) may be coalesced (about every "
        "30 ms); when the client reads too slowly, `message.delta` may also be dropped "
        "(`message.complete` carries the canonical text; `session.events.since` replays what "
        "was dropped). Every other event is a control event, never coalesced or dropped.",
    ),
)
"""Every notification the gateway sends."""
