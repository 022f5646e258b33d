"""The collaborators of :class:`tui_gateway.gateway.Gateway`, made and wired together once.

Each contract method of the gateway hands its work to one of these; here they are built from the
configuration, in the order they need each other: events first (everything publishes), then the
servers, the sessions and their store, the context windows and compression, the console, the
booking office (every stop), the turns, the saved sessions and the shutdown.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.store import SessionStore, SharedStore
from agent.tools.workspace import Workspace
from contract.events import Payload
from tui_gateway.console import Console
from tui_gateway.console.commands import ConsoleHost
from tui_gateway.engine_setup import AgentFactory, GatewayConfig
from tui_gateway.events.event_hub import EventHub
from tui_gateway.events.shared_events import SharedEvents
from tui_gateway.servers.mcp_servers import McpServers
from tui_gateway.servers.model_server import ModelServer
from tui_gateway.sessions.persistence import Persistence
from tui_gateway.sessions.project import WorkspaceFiles, first_messages
from tui_gateway.sessions.saved_sessions import SavedSessions
from tui_gateway.sessions.session_table import SessionTable
from tui_gateway.stops.booking import BookingOffice
from tui_gateway.stops.remote import RemoteStops
from tui_gateway.stops.shutdown import Shutdown
from tui_gateway.turns.compression import SessionCompression
from tui_gateway.turns.context_window import SessionWindows
from tui_gateway.turns.fitted_turns import FittedTurns
from tui_gateway.turns.tool_offer import ToolOffer
from tui_gateway.turns.turn_runner import TurnRunner, default_agent_factory


@dataclass(frozen=True, slots=True)
class GatewayParts:
    """The collaborators of one gateway (each one's job is in its own module).

    Attributes:
        cwd: the directory sessions' tools and commands work in.
        events: numbers events and hands them to subscribers.
        server: the model server (``server.status``).
        mcp: the MCP servers (started by :meth:`McpServers.start`, not here).
        table: the live sessions.
        persistence: the store's writes.
        windows: each session's context window.
        console: console commands.
        booking: every stop, the queue's fate, each outcome once.
        files: the workspace's files for ``@`` mentions.
        runner: makes turns and runs them (its ``checkpoints`` undo them).
        saved: list, resume, rename, delete.
        offered: the tool definitions every turn is offered now.
        shutdown: the one shutdown.
    """

    cwd: Path
    events: EventHub
    server: ModelServer
    mcp: McpServers
    table: SessionTable
    persistence: Persistence
    windows: SessionWindows
    console: Console
    booking: BookingOffice
    files: WorkspaceFiles
    runner: TurnRunner
    saved: SavedSessions
    offered: Callable[[], list[dict[str, Any]]]
    shutdown: Shutdown


def build_parts(
    host: ConsoleHost,
    config: GatewayConfig,
    agent_factory: AgentFactory | None,
    store: SessionStore | None,
) -> GatewayParts:
    """Make the collaborators of the gateway ``host`` (the console's commands call it back).

    Nothing starts here but a shared store's stop listener (a :class:`RemoteStops`, on a
    :class:`~agent.store.SharedStore` only); the MCP servers are started by the caller.
    """
    cwd = config.cwd if config.cwd is not None else Path.cwd()
    shared = store if isinstance(store, SharedStore) else None
    journal = SharedEvents(shared.events) if shared is not None else None
    events = EventHub(config.coalesce_s, journal)
    publish = events.publish
    server = ModelServer(config.provider, publish, server_nice=config.server_nice)
    mcp = McpServers(
        config.mcp_servers if config.tools else (),
        lambda payload, key: publish(None, payload, sticky=key),
        cwd=cwd,
    )
    table = SessionTable(config.max_sessions)
    persistence = Persistence(
        store, publish, unsaved_dir=config.unsaved_dir, close_wait_s=config.store_wait_s
    )
    offer = ToolOffer(config, mcp)
    offered = offer.schemas
    windows = SessionWindows(
        config.context_window,
        publish,
        tool_schemas=config.tool_schemas,
        first=lambda: first_messages(config, cwd),
    )
    compression = SessionCompression(
        windows,
        store,
        publish,
        threshold=config.compress_threshold,
        tools=offered,
        record=persistence.compression_ended,
    )

    def publish_to(session_id: str, payload: Payload) -> None:
        publish(table.find(session_id), payload)

    console = Console(
        host,
        publish_to,
        max_workers=config.console_workers,
        timeout_s=config.console_timeout_s,
        exit_bound_s=config.shutdown_timeout_s,
    )
    wait_s = config.shutdown_timeout_s
    remote = RemoteStops(shared.stops, shared.owner, shared.leases) if shared is not None else None
    booking = BookingOffice(table, persistence, console, publish, wait_s=wait_s, remote=remote)
    fitted = FittedTurns(
        compression,
        publish,
        offered,
        booking.compression_started,
        saving_waits=lambda session: persistence.waiting(session) > 0,
    )
    if remote is not None:  # stops other hosts send for turns running here
        remote.listen(booking)
    workspace = Workspace.at(cwd, config.denied_paths)
    runner = TurnRunner(
        config,
        table,
        persistence,
        fitted,
        booking,
        publish,
        agent_factory=agent_factory or default_agent_factory(config),
        tools=offer.registry,
        cwd=cwd,
        workspace=workspace,
        extra_tools=mcp.tools,
        server=server,
    )
    saved = SavedSessions(
        config,
        table,
        persistence,
        booking,
        publish,
        windows,
        offered,
        provider=lambda: server.provider,
    )
    answers = windows.server_answers
    server.on_ready = lambda ready: answers(
        ready, table.all(), offered(), listed=server.status().lists
    )
    shutdown = Shutdown(
        table,
        booking,
        console,
        runner,
        persistence,
        events,
        bound_s=wait_s,
        mcp=mcp,
        close_tools=offer.close,
    )
    return GatewayParts(
        cwd=cwd,
        events=events,
        server=server,
        mcp=mcp,
        table=table,
        persistence=persistence,
        windows=windows,
        console=console,
        booking=booking,
        files=WorkspaceFiles(workspace, cwd),
        runner=runner,
        saved=saved,
        offered=offered,
        shutdown=shutdown,
    )
