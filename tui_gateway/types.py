"""The gateway's request and result types: configuration, setup of a turn's agent, errors."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from agent.agent import Agent
from agent.events import AgentListener
from agent.provider.client import ProviderConfig
from agent.tools.registry import ToolRegistry
from agent.tools.runner import Approver
from agent.tools.workspace import Workspace
from tui_gateway.events import StopReceipt
from tui_gateway.mcp_settings import McpServerSettings


@dataclass(frozen=True, slots=True)
class AgentSetup:
    """What the gateway hands the agent factory for one turn.

    Attributes:
        listener: receives the turn's agent events (never blocks).
        approve: asks the person before a tool call that needs approval.
        tools: the tools offered, or None.
        cwd: the directory tool calls run in (the workspace).
        provider: the session's provider settings (its model may differ from the gateway's).
        workspace: the file tools' boundary (see :mod:`agent.tools.workspace`); None: one at
            ``cwd`` with the default deny list.
    """

    listener: AgentListener
    approve: Approver | None
    tools: ToolRegistry | None
    cwd: Path
    provider: ProviderConfig
    workspace: Workspace | None = None


AgentFactory = Callable[[AgentSetup], Agent]


class GatewayError(Exception):
    """A request the gateway refuses, with a one-line ``message`` and a JSON-RPC ``code``."""

    def __init__(self, message: str, code: int = -32000) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


@dataclass(frozen=True, slots=True)
class GatewayConfig:
    """How the gateway runs turns.

    Attributes:
        provider: where the model server is.
        system_prompt: first message of every new session, or None.
        stream: stream replies (the default) or request whole bodies.
        shutdown_timeout_s: how long shutdown waits for workers, in seconds.
        coalesce_s: seconds between delta deliveries to a subscriber.
        max_prompt_chars: longest prompt accepted, in characters.
        inactivity_timeout_s: a turn that receives nothing from the model server for this many
            seconds is stopped as ``inactivity`` (a system stop); None never.
        tools: offer the model the built-in tools (shell, read_file, write_file, list_dir).
        approvals: ask the person before ``shell`` and ``write_file`` calls, and before a file
            tool's call on a path outside the workspace.
        cwd: the workspace: the directory tool calls run in, inside which ``read_file`` and
            ``list_dir`` need no approval (default: the process's working directory).
        denied_paths: files the file tools refuse besides the default deny list (see
            :func:`agent.tools.workspace.default_denied`): the session database and the
            ``desk serve`` token file when they live elsewhere (SQLite's side files too).
        max_iterations: most model calls in one turn.
        console_workers: console commands running at once.
        console_timeout_s: a console command running longer is stopped as ``console.timeout``.
        max_sessions: live sessions kept; creating one more evicts the least recently used
            (an idle one first; a running turn is hard-stopped as ``session.evicted`` first).
        context_window: the model's context window in tokens; None asks the server (llama.cpp
            ``/props``, Ollama ``/api/show``) and falls back to 8192.
        compress_threshold: a prompt larger than this share of the window is compressed first.
        mcp_servers: the MCP servers whose tools the model is offered besides the built-in
            ones (started with the gateway; none when ``tools`` is False).
    """

    provider: ProviderConfig
    system_prompt: str | None = None
    stream: bool = True
    shutdown_timeout_s: float = 10.0
    coalesce_s: float = 0.03
    max_prompt_chars: int = 1_000_000
    inactivity_timeout_s: float | None = 300.0
    tools: bool = True
    approvals: bool = True
    cwd: Path | None = None
    denied_paths: tuple[Path, ...] = ()
    max_iterations: int = 25
    console_workers: int = 2
    console_timeout_s: float = 60.0
    max_sessions: int = 8
    context_window: int | None = None
    compress_threshold: float = 0.75
    mcp_servers: tuple[McpServerSettings, ...] = ()


@dataclass(frozen=True, slots=True)
class ConsoleCommandInfo:
    """One command the gateway's console runs (``console.commands``).

    Attributes:
        name: the command word, without a leading ``/`` (``digest``, ``sessions``).
        usage: how it is typed, e.g. ``/new [TITLE]`` or ``digest PATH...``.
        summary: one line saying what it does.
    """

    name: str
    usage: str
    summary: str


@dataclass(frozen=True, slots=True)
class SubmitResult:
    """What ``prompt.submit`` did: the new ``turn_id``, and whether it waits in the queue."""

    turn_id: str
    queued: bool


@dataclass(frozen=True, slots=True)
class ShutdownReport:
    """What ``gateway.shutdown`` did.

    Attributes:
        turns_stopped: running turns hard-stopped as ``gateway.shutdown``.
        prompts_dropped: queued prompts that will never run.
        threads_left: names of worker threads still alive at the deadline (empty on success).
        elapsed_s: seconds the shutdown took.
    """

    turns_stopped: int
    prompts_dropped: int
    threads_left: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0


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
class TranscriptEntry:
    """One message of a resumed session, as a frontend shows it.

    Attributes:
        role: ``system``, ``user``, ``assistant`` or ``tool``.
        content: the text.
        partial: True for a reply that was cut short (stopped, failed, or a crash).
        tool_names: for an assistant message, the tools it called.
        note: on the last message of a turn that did not complete: who stopped it ("stopped
            by you", "stopped by the system: ..."), why it failed ("failed: ..."), or, for a
            queued prompt that never ran, why ("not sent: ...").
        stop: beside ``note`` on a stopped turn: the stop's figures as they were measured, so
            a frontend can show the same receipt it showed live.
        summary: True for the summary a compression wrote in place of the messages it
            replaced (a ``user`` message whose first line is a marker, not something typed).
    """

    role: str
    content: str
    partial: bool = False
    tool_names: tuple[str, ...] = ()
    note: str = ""
    stop: StopReceipt | None = None
    summary: bool = False


@dataclass(frozen=True, slots=True)
class ResumedSession:
    """What ``session.resume`` returns: the session and its transcript, oldest first."""

    session_id: str
    title: str
    model: str
    transcript: list[TranscriptEntry] = field(default_factory=list)
