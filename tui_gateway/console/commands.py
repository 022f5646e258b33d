"""The console's commands: ordinary synchronous code, stoppable through its scope.

``digest PATH...`` is the case the scope exists for: plain synchronous code that, deep inside,
creates its own :class:`agent.agent.Agent` per file. The agent registers with the console's
scope when its turn begins, so a cancel or a timeout stops the model request at once, and
:meth:`CommandContext.check` ends the loop at the next file.
"""

from __future__ import annotations

import concurrent.futures
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from agent.agent import Agent
from agent.context.budget import ContextBudget, largest_prompt
from agent.context.shrink import cut_middle
from agent.events import AgentEvent, TextDelta
from agent.home_path import expand_home
from agent.provider.client import ChatClient, ProviderConfig
from agent.provider.types import ChatMessage
from agent.scope import InterruptScope
from agent.stops import StopRequest, Surface
from agent.usage import TokenUsage
from contract.results import ChildInfo, ConsoleCommandInfo

if TYPE_CHECKING:
    from agent.mcp import ServerStatus
    from tui_gateway.servers.mcp_servers import McpServers
    from tui_gateway.servers.model_server import ModelServer

DIGEST_MAX_BYTES = 64_000
"""Largest part of a file ``digest`` sends to the model, in bytes."""


class CommandError(Exception):
    """A command failed in a way the person should read: ``message`` is one line."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class CommandStopped(Exception):
    """Raised inside a command when its scope was cancelled."""


class ConsoleHost(Protocol):
    """What console commands may ask of the gateway."""

    def session_create(self, title: str = "") -> str:
        """Create a session; returns its id."""
        ...

    def session_summaries(self) -> list[str]:
        """One line per live session."""
        ...

    def session_interrupt(
        self, session_id: str, stop: StopRequest, turn_id: str | None = None
    ) -> str | None:
        """Hard-stop the session's running turn."""
        ...

    def session_set_model(self, session_id: str, model: str) -> None:
        """Use ``model`` for the session's next turns."""
        ...

    def provider_for(self, session_id: str) -> ProviderConfig:
        """The provider settings the session's turns use."""
        ...

    def context_budget(self, session_id: str) -> ContextBudget:
        """The session's context window and calibrated count (a console agent's requests are
        checked against it like a turn's)."""
        ...

    def session_cwd(self, session_id: str) -> Path:
        """The directory the session works in."""
        ...

    def session_instructions(self, session_id: str) -> list[str]:
        """The project instructions files the session's system message carries."""
        ...

    def session_usage(self, session_id: str) -> TokenUsage:
        """The session's model requests summed."""
        ...

    def archived_messages(self, session_id: str) -> list[tuple[str, str]]:
        """``(role, content)`` of the messages compressions archived, oldest first."""
        ...

    def session_agents(self, session_id: str) -> list[ChildInfo]:
        """The session's child agents, live and ended."""

    @property
    def mcp(self) -> McpServers:
        """The gateway's MCP servers."""
        ...

    @property
    def server(self) -> ModelServer:
        """The gateway's model server."""
        ...


@dataclass(slots=True)
class CommandContext:
    """What a running command gets.

    Attributes:
        session_id: the session the command was typed in.
        scope: the command's scope (agents created inside register with it).
        write: sends output text to the console (does not block).
        host: the gateway.
    """

    session_id: str
    scope: InterruptScope
    write: Callable[[str], None]
    host: ConsoleHost

    def check(self) -> None:
        """Raise :class:`CommandStopped` when the command has been cancelled."""
        if self.scope.cancelled:
            raise CommandStopped()


Command = Callable[[CommandContext, list[str]], str | None]


def _help(ctx: CommandContext, _args: list[str]) -> None:
    for _name, (_fn, usage, what) in sorted(COMMANDS.items()):
        ctx.write(f"{usage:<22} {what}\n")
    files = ctx.host.session_instructions(ctx.session_id)
    if files:
        ctx.write(f"project instructions read: {', '.join(files)}\n")
    else:
        ctx.write("project instructions: none (no AGENTS.md or CLAUDE.md; /init writes one)\n")


def _usage(ctx: CommandContext, _args: list[str]) -> None:
    usage = ctx.host.session_usage(ctx.session_id)
    if not usage.requests:
        ctx.write("no model requests in this session yet\n")
        return
    ctx.write(f"this session: {usage.line()}\n")
    if usage.estimated:
        ctx.write(
            f"{usage.estimated_requests} of them ended before the server reported its counts "
            "(stopped): desk's estimate is counted for those\n"
        )


def _sessions(ctx: CommandContext, _args: list[str]) -> None:
    for line in ctx.host.session_summaries():
        ctx.write(line + "\n")


def _new(ctx: CommandContext, args: list[str]) -> str:
    session_id = ctx.host.session_create(" ".join(args))
    ctx.write(f"new session {session_id}\n")
    return session_id


def _stop(ctx: CommandContext, _args: list[str]) -> None:
    stop = StopRequest.by_user(Surface.CONSOLE_STOP, "stopped with /stop")
    turn = ctx.host.session_interrupt(ctx.session_id, stop)
    ctx.write("stopped the running turn\n" if turn else "nothing is running\n")


def _agents(ctx: CommandContext, args: list[str]) -> None:
    agents = ctx.host.session_agents(ctx.session_id)
    if args:
        if len(args) != 2 or args[0] != "stop":
            raise CommandError("usage: /agents [stop ID]")
        found = [a for a in agents if a.turn_id.startswith(args[1])]
        if len(found) != 1:
            what = "no child agent" if not found else "more than one child agent"
            raise CommandError(f"{what} has an id starting with {args[1]!r}; /agents lists them")
        stop = StopRequest.by_user(Surface.CONSOLE_STOP, "stopped with /agents stop")
        stopped = ctx.host.session_interrupt(ctx.session_id, stop, turn_id=found[0].turn_id)
        ctx.write(f"stopped child agent {found[0].turn_id}\n" if stopped else "it had ended\n")
        return
    if not agents:
        ctx.write("no child agents in this session: the model starts them with delegate\n")
        return
    for a in agents:
        state = "running" if a.running else a.exit_reason
        kind = "background" if a.background else "foreground"
        indent = "  " * (a.depth - 1)
        ctx.write(f"{indent}{a.turn_id}  {kind}  {state}  {a.elapsed_s:.1f} s  {a.task}\n")


def _model(ctx: CommandContext, args: list[str]) -> None:
    from contract.errors import GatewayError

    if len(args) > 1:
        raise CommandError("usage: /model NAME")
    if not args:
        status = ctx.host.server.status()
        model = ctx.host.provider_for(ctx.session_id).model or "none yet"
        listed = status.listing() if status.models else "nothing (or could not be asked)"
        ctx.write(f"this session uses {model}; the server at {status.base_url} lists {listed}\n")
        return
    try:
        ctx.host.session_set_model(ctx.session_id, args[0])
    except GatewayError as exc:
        raise CommandError(exc.message) from None
    ctx.host.server.use_model(args[0])
    ctx.write(f"this session now uses model {args[0]} (new sessions too)\n")


SERVER_WAIT_S = 6.0
"""Longest ``/server`` waits for the server's answer, in seconds."""


def _server(ctx: CommandContext, args: list[str]) -> None:
    from contract.errors import GatewayError
    from tui_gateway.servers.model_server import status_line

    if len(args) > 1:
        raise CommandError("usage: /server [URL]")
    server = ctx.host.server
    if args:
        try:
            server.switch(args[0])
        except GatewayError as exc:
            raise CommandError(exc.message) from None
    model = ctx.host.provider_for(ctx.session_id).model
    status = server.wait_answer(SERVER_WAIT_S)
    if status.problem or status.model_problem(model or status.model):  # refused: an error
        raise CommandError(status_line(status, model))
    ctx.write(status_line(status, model) + "\n")


def _digest(ctx: CommandContext, args: list[str]) -> None:
    if not args:
        raise CommandError("usage: digest PATH...")
    client = ChatClient(ctx.host.provider_for(ctx.session_id))
    budget = ctx.host.context_budget(ctx.session_id)
    cwd = ctx.host.session_cwd(ctx.session_id)
    unreadable: list[str] = []
    for name in args:
        ctx.check()
        path = (cwd / expand_home(name)).absolute()
        try:
            data = path.read_bytes()[:DIGEST_MAX_BYTES]
        except OSError as exc:
            ctx.write(f"{name}: cannot read it: {exc.strerror or exc}\n")
            unreadable.append(name)
            continue
        ctx.write(f"## {name}\n")
        text = data.decode("utf-8", errors="replace")
        summary = _summarise(client, budget, name, text, ctx.write)
        ctx.write("\n" if summary.endswith("\n") else "\n\n")
        ctx.check()
    if unreadable:
        raise CommandError(f"could not read {', '.join(unreadable)}")


def _summarise(
    client: ChatClient,
    budget: ContextBudget,
    name: str,
    text: str,
    write: Callable[[str], None],
) -> str:
    def on_event(event: AgentEvent) -> None:
        if isinstance(event, TextDelta) and event.text:
            write(event.text)

    # registers with the console's scope on entry; its request is checked against the window
    agent = Agent(client, listener=on_event, context=budget)
    system = ChatMessage("system", "Summarise the file in at most five short bullet points.")
    head = f"File `{name}`:\n\n"
    room = largest_prompt(budget.window.tokens, measured=budget.calibration.measured)
    room -= budget.count([system, ChatMessage("user", head)])
    keep = int(max(0, room) * budget.calibration.chars_per_token * 0.9)
    result = agent.run_conversation([system], head + cut_middle(text, keep))
    if result.status == "interrupted":
        raise CommandStopped()
    if result.status == "failed":
        raise CommandError(f"{name}: {result.error}")
    return result.text


def _archived(ctx: CommandContext, _args: list[str]) -> None:
    archived = ctx.host.archived_messages(ctx.session_id)
    if not archived:
        ctx.write("no archived messages: nothing was compressed in this session\n")
        return
    ctx.write(f"{len(archived)} messages replaced by summaries, oldest first:\n")
    for role, content in archived:
        ctx.check()
        ctx.write(f"[{role}] {content}\n")


MCP_RESTART_WAIT_S = 120.0
"""Longest ``/mcp restart NAME`` waits for the server to be ready, in seconds."""


def mcp_line(status: ServerStatus) -> str:
    """One line of ``/mcp``: name, state, transport, then its tools or why it failed."""
    head = f"{status.name:<16} {status.state.value:<9} {status.transport:<5}"
    if status.message:
        return f"{head} {status.message}"
    if status.tools:
        names = ", ".join(tool.exposed for tool in status.tools)
        count = len(status.tools)
        return f"{head} {count} tool{'s' if count != 1 else ''}: {names}"
    return head.rstrip()


def _mcp(ctx: CommandContext, args: list[str]) -> None:
    if args and args[0] == "restart":
        if len(args) != 2:
            raise CommandError("usage: /mcp restart NAME")
        _mcp_restart(ctx, args[1])
        return
    if args:
        raise CommandError("usage: /mcp (list the servers) or /mcp restart NAME")
    statuses = ctx.host.mcp.statuses()
    if not statuses:
        ctx.write("no MCP servers: add [mcp_servers.NAME] to config.toml, or --mcp NAME=COMMAND\n")
        return
    for status in statuses:
        ctx.write(mcp_line(status) + "\n")


def _mcp_restart(ctx: CommandContext, name: str) -> None:
    from contract.errors import GatewayError

    try:
        future = ctx.host.mcp.restart(name)
    except GatewayError as exc:
        raise CommandError(exc.message) from None
    ctx.write(f"restarting {name}...\n")
    waited = 0.0
    while waited < MCP_RESTART_WAIT_S:
        ctx.check()
        try:
            status = future.result(timeout=0.05)  # short waits: a cancel is seen at once
        except concurrent.futures.TimeoutError:
            waited += 0.05
            continue
        ctx.write(mcp_line(status) + "\n")
        if status.message:
            raise CommandError(f"mcp: {name} failed: {status.message}")
        return
    raise CommandError(f"mcp: {name} is still starting after {MCP_RESTART_WAIT_S:g} s")


COMMANDS: dict[str, tuple[Command, str, str]] = {
    "help": (_help, "/help", "list the commands"),
    "sessions": (_sessions, "/sessions", "list the live sessions"),
    "new": (_new, "/new [TITLE]", "start a new session"),
    "stop": (_stop, "/stop", "stop this session's running turn"),
    "agents": (_agents, "/agents [stop ID]", "list this session's child agents, or stop one"),
    "model": (_model, "/model [NAME]", "use another model (no name: the ones the server lists)"),
    "server": (_server, "/server [URL]", "use another model server, or ask this one again"),
    "digest": (_digest, "digest PATH...", "summarise files with the model"),
    "usage": (_usage, "/usage", "tokens this session's model requests used, as the server said"),
    "archived": (_archived, "/archived", "show the messages compressions replaced"),
    "mcp": (_mcp, "/mcp [restart NAME]", "list the MCP servers and their tools; restart one"),
}
"""Command name -> (function, usage, one-line description)."""

MARKDOWN_OUTPUT = frozenset({"digest"})
"""The commands whose output is Markdown."""


def command_infos() -> list[ConsoleCommandInfo]:
    """What :data:`COMMANDS` holds, by name (``console.commands``)."""
    return [
        ConsoleCommandInfo(name=name, usage=usage, summary=what, markdown=name in MARKDOWN_OUTPUT)
        for name, (_fn, usage, what) in sorted(COMMANDS.items())
    ]


def execute(line: str, ctx: CommandContext) -> str | None:
    """Parse and run one command line.

    Returns:
        a session id the frontend should switch to (``/new``), else None.

    Raises:
        CommandError: unknown command, bad arguments, or a failure to report in one line.
        CommandStopped: the command was cancelled.
    """
    try:
        words = shlex.split(line)
    except ValueError as exc:
        raise CommandError(f"cannot parse the command line: {exc}") from exc
    if not words:
        raise CommandError("the command line is empty")
    name = words[0].removeprefix("/")
    entry = COMMANDS.get(name)
    if entry is None:
        raise CommandError(f"unknown command {words[0]!r}; /help lists the commands")
    ctx.check()
    return entry[0](ctx, words[1:])
