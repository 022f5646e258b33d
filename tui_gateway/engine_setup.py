"""How the gateway is set up: its configuration, and what it hands the agent factory per turn."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agent.agent import Agent
from agent.context.tool_schemas import ToolSchemas
from agent.events import AgentListener
from agent.provider.client import ProviderConfig
from agent.tools.changes import ChangeRecorder
from agent.tools.registry import ToolRegistry
from agent.tools.runner import Approver
from agent.tools.sandbox import SandboxMode
from agent.tools.workspace import Workspace
from tui_gateway.settings.mcp_settings import McpServerSettings


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
        changes: records what files hold before the turn's tools change them (its
            checkpoint); None records nothing.
    """

    listener: AgentListener
    approve: Approver | None
    tools: ToolRegistry | None
    cwd: Path
    provider: ProviderConfig
    workspace: Workspace | None = None
    changes: ChangeRecorder | None = None


AgentFactory = Callable[[AgentSetup], Agent]


@dataclass(frozen=True, slots=True)
class GatewayConfig:
    """How the gateway runs turns.

    Attributes:
        provider: where the model server is.
        system_prompt: first message of every new session, or None.
        project_instructions: add the workspace's ``AGENTS.md`` files to a new session's
            system message (see :mod:`agent.context.instructions`).
        stream: stream replies (the default) or request whole bodies.
        shutdown_timeout_s: how long shutdown waits for workers, and how long a cancelled
            console command may take to exit before it is reported stuck, in seconds.
        coalesce_s: seconds between delta deliveries to a subscriber.
        max_prompt_chars: longest prompt accepted, in characters.
        inactivity_timeout_s: a turn that receives nothing from the model server for this many
            seconds is stopped as ``inactivity`` (a system stop); None never.
        tools: offer the model the built-in tools (shell, read_file, write_file, list_dir).
        tool_schemas: how tool definitions are sent: whole, compact, or compact on a small
            window (:mod:`agent.context.tool_schemas`).
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
        store_wait_s: how long a shutdown waits for a database that cannot take the last
            writes (locked by another program, a server gone) before it exports them to a
            file (see :mod:`tui_gateway.sessions.unsaved`), in seconds.
        unsaved_dir: where writes that could not be saved are exported (None: beside the
            default database, ``$XDG_DATA_HOME/desk/unsaved``).
        delegate_depth: how deep child agents may nest (1: a turn's children cannot delegate
            again); 0 offers no ``delegate`` tool. A call beyond it gets a tool error.
        delegate_width: most child agents one agent runs at once; a call beyond it gets a
            tool error.
        mcp_servers: the MCP servers whose tools the model is offered besides the built-in
            ones (started with the gateway; none when ``tools`` is False).
        sandbox: how ``shell`` commands are confined: ``workspace-write``, ``read-only`` or
            ``off`` (see :mod:`agent.tools.sandbox`; the settings choose ``workspace-write``
            where bubblewrap works).
        sandbox_network: let sandboxed commands reach the network.
        sandbox_note: one line to show at start about the sandbox ("" for none), e.g. why
            ``shell`` runs without one.
        server_nice: a model server on this machine, in another session, yields the CPU to
            desk at this group nice while the gateway runs (1-19; 0, the default here: left
            alone; the ``server_nice`` setting, 10 by default, see
            :mod:`tui_gateway.servers.server_yield`).
    """

    provider: ProviderConfig
    system_prompt: str | None = None
    project_instructions: bool = True
    stream: bool = True
    shutdown_timeout_s: float = 10.0
    coalesce_s: float = 0.03
    max_prompt_chars: int = 1_000_000
    inactivity_timeout_s: float | None = 300.0
    tools: bool = True
    tool_schemas: ToolSchemas = ToolSchemas.AUTO
    approvals: bool = True
    cwd: Path | None = None
    denied_paths: tuple[Path, ...] = ()
    max_iterations: int = 25
    console_workers: int = 2
    console_timeout_s: float = 60.0
    max_sessions: int = 8
    context_window: int | None = None
    compress_threshold: float = 0.75
    store_wait_s: float = 10.0
    unsaved_dir: Path | None = None
    delegate_depth: int = 2
    delegate_width: int = 4
    mcp_servers: tuple[McpServerSettings, ...] = ()
    sandbox: SandboxMode = "off"
    sandbox_network: bool = False
    sandbox_note: str = ""
    server_nice: int = 0
