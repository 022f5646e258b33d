"""``desk acp``: serve one ACP client (an editor) on stdin/stdout until it goes away.

It reads desk's settings as every entry point does (flags, environment, ``config.toml``);
sessions are kept in the desk's own database unless ``--db`` says otherwise, so ``session/load``
finds what the desk saved and the reverse. The gateway is built for the first ``session/new``
or ``session/load``: its tools work in the client's directory (unless ``--workspace`` or the
settings name one) and it starts the client's MCP servers beside the configured ones.

How it ends: end of file on stdin (the client closed it, or died) is the system's stop
(``acp.disconnect``): running turns end, the gateway waits for its workers, and the process
exits 0. SIGTERM, SIGHUP and SIGINT shut the gateway down (``gateway.shutdown``), answer the
pending prompts (``cancelled``), and exit 0. stdout carries protocol lines only: anything else
this process prints goes to stderr.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import cast

from acp.agent.connection import AgentSideConnection
from acp.interfaces import Agent

from agent.provider.client import ProviderConfig
from agent.stops import Surface
from tui_gateway.acp.agent import DeskAgent, GatewayOpener
from tui_gateway.assembly import build_gateway
from tui_gateway.gateway import Gateway
from tui_gateway.settings.mcp_settings import McpServerSettings
from tui_gateway.settings.resolution import DEFAULT_ORIGIN, Settings, SettingsError, StoreDefault
from tui_gateway.wire.options import (
    DemoModel,
    fail,
    parse,
    parser,
    provider_from,
    settings_from,
)

ANSWER_BOUND_S = 5.0
"""After a shutdown, how long the pending prompts' answers may take to be written (seconds)."""

LINE_LIMIT_BYTES = 16 * 1024 * 1024
"""Longest line read from the client (an embedded file in a prompt may be large)."""


def main_acp(argv: Sequence[str], demo: DemoModel | None = None) -> int:
    """``desk acp``: an ACP agent on stdin/stdout.

    Returns:
        0 after the client went away or a signal; 2 for a bad flag or setting (one line on
        stderr).
    """
    prog = "desk acp"
    p = parser(
        prog,
        "Run desk as an Agent Client Protocol agent on stdin/stdout (for Zed, JetBrains, toad).",
        store_default=StoreDefault.USER_DATA,
    )
    try:
        args = parse(p, argv)
        settings = settings_from(args, os.environ, store_default=StoreDefault.USER_DATA)
    except SettingsError as exc:
        return fail(prog, exc.message)
    out_fd = os.dup(1)  # protocol lines only: stray prints land on stderr
    os.dup2(2, 1)
    try:
        with provider_from(settings, demo) as provider:
            return asyncio.run(_serve(settings, provider.config, not args.no_tools, out_fd))
    except SettingsError as exc:
        return fail(prog, exc.message)
    finally:
        os.close(out_fd)


def _opener(settings: Settings, provider: ProviderConfig, tools: bool) -> GatewayOpener:
    """Builds the gateway in the client's directory, with the client's MCP servers too."""

    def open_gateway(cwd: Path, servers: tuple[McpServerSettings, ...]) -> Gateway:
        chosen = settings
        if settings.origin("workspace") == DEFAULT_ORIGIN and cwd.is_dir():
            chosen = replace(chosen, workspace=cwd.resolve())
        if servers:
            merged = {**chosen.mcp_servers, **{m.name: m for m in servers}}
            chosen = replace(chosen, mcp_servers=merged)
        return build_gateway(chosen, provider, tools=tools)

    return open_gateway


async def _serve(settings: Settings, provider: ProviderConfig, tools: bool, out_fd: int) -> int:
    loop = asyncio.get_running_loop()
    agent = DeskAgent(_opener(settings, provider, tools), loop)
    reader, writer = await _streams(0, out_fd)
    # The SDK routes a method to the agent's attribute of that name, and answers "method not
    # found" for those it lacks (list, fork, resume, close...): DeskAgent has the ones it serves.
    conn = AgentSideConnection(cast(Agent, agent), writer, reader, listening=False)
    listening = asyncio.ensure_future(conn.listen())
    signalled = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        loop.add_signal_handler(sig, signalled.set)
    waiting = asyncio.ensure_future(signalled.wait())
    done, _ = await asyncio.wait({listening, waiting}, return_when=asyncio.FIRST_COMPLETED)
    gateway = agent.gateway
    if gateway is not None:
        if listening in done:  # the client closed stdin, or died
            await asyncio.to_thread(gateway.frontend_gone, Surface.ACP_DISCONNECT)
        await asyncio.to_thread(gateway.shutdown)
    if waiting in done:  # the client is still there: answer what it waits for
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(agent.idle(), ANSWER_BOUND_S)
    for task in (listening, waiting):
        task.cancel()
    with contextlib.suppress(Exception):
        await conn.close()
    return 0


async def _streams(in_fd: int, out_fd: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """asyncio streams over the two descriptors (stdin, and the saved stdout)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=LINE_LIMIT_BYTES)
    protocol = asyncio.StreamReaderProtocol(reader)
    await loop.connect_read_pipe(lambda: protocol, os.fdopen(in_fd, "rb", buffering=0))
    transport, flow = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, os.fdopen(os.dup(out_fd), "wb", buffering=0)
    )
    writer = asyncio.StreamWriter(transport, flow, None, loop)
    return reader, writer
