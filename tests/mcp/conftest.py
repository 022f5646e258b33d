"""Fixtures for the MCP tests: real servers (the test server, the published time server), a
gateway over the demo model that offers their tools, and waiting on process groups.

A server takes one to three seconds to start here (Python and the SDK import), so the turn tests
share one gateway per module (:func:`mcp_gateway`); each test opens its own session and reads
the events of its own turns.
"""

from __future__ import annotations

import os
import select
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from agent.provider.client import ProviderConfig
from agent.tools.process import group_members
from contract.events import GatewayEvent
from contract.mcp_events import McpServerChanged
from demo_model.server import DemoModelServer
from tests.mcp.witness import Witness, server_command
from tests.support import EventLog, running_demo
from tui_gateway.gateway import Gateway, GatewayConfig
from tui_gateway.settings.mcp_settings import McpApproval, McpServerSettings

STARTUP_S = 60.0
"""Generous: servers start slowly on a loaded two-core machine."""


def our_server(
    name: str, witness: Witness | None, *flags: str, **settings: object
) -> McpServerSettings:
    """Settings of the test server under ``name`` (extra flags go on its command line)."""
    command = server_command(witness, "--name", name, *flags)
    return McpServerSettings(
        name=name,
        command=command[0],
        args=command[1:],
        startup_timeout_s=STARTUP_S,
        **settings,  # type: ignore[arg-type]
    )


def time_command() -> str:
    """The installed ``mcp-server-time`` script (beside this interpreter, else on PATH)."""
    script = Path(sys.executable).with_name("mcp-server-time")
    if script.exists():
        return str(script)
    found = shutil.which("mcp-server-time")
    assert found, "mcp-server-time is not installed (pip install -e '.[test]')"
    return found


def ready(log: EventLog, name: str, timeout: float = STARTUP_S) -> McpServerChanged:
    """Wait for the server's ``mcp.server`` event that says it is ready (or failed)."""

    def settled(events: list[GatewayEvent]) -> bool:
        return any(
            isinstance(e.payload, McpServerChanged)
            and e.payload.name == name
            and e.payload.state in ("ready", "failed")
            for e in events
        )

    assert log.wait_for(settled, timeout), f"{name} did not start in {timeout} s"
    return [p for p in log.of_type(McpServerChanged) if p.name == name and p.state != "starting"][
        -1
    ]


def wait_exited(pids: set[int], timeout: float = 20.0) -> set[int]:
    """Wait until every pid has exited (a zombie counts as exited); the ones still running.

    Uses pidfds (Linux): each becomes readable when its process ends, so this waits on the
    kernel, not on a timer.
    """
    fds: dict[int, int] = {}
    for pid in pids:
        try:
            fds[os.pidfd_open(pid)] = pid
        except ProcessLookupError:
            continue
    try:
        pending = set(fds)
        deadline = timeout
        import time

        end = time.monotonic() + deadline
        while pending and time.monotonic() < end:
            readable, _, _ = select.select(list(pending), [], [], end - time.monotonic())
            pending -= set(readable)
        return {fds[fd] for fd in pending}
    finally:
        for fd in fds:
            os.close(fd)


def alive_in_group(pgid: int) -> set[int]:
    """Members of the process group that are not zombies."""
    members = group_members(pgid)
    assert members is not None, "needs /proc"
    return members[0]


@dataclass
class McpRig:
    """One gateway with MCP servers over a demo model, and what watches them."""

    gateway: Gateway
    log: EventLog
    witness: Witness
    demo: DemoModelServer


@pytest.fixture(scope="module")
def mcp_rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpRig]:
    """The shared gateway: servers ``test`` (approval always), ``tight`` (asks, read-only tools
    allowed, 1 s tool timeout), ``time`` (the published server, read-only tools allowed) and
    ``broken`` (fails to start), ``closed`` (approval never)."""
    with running_demo(2000.0) as demo:
        witness = Witness()
        servers = (
            our_server("test", witness, approval=McpApproval.ALWAYS),
            our_server("tight", witness, tool_timeout_s=1.0, allow_read_only=True),
            McpServerSettings(
                name="time",
                command=time_command(),
                args=("--local-timezone", "UTC"),
                startup_timeout_s=STARTUP_S,
                allow_read_only=True,
            ),
            our_server("broken", witness, "--fail-start"),
            our_server("closed", witness, approval=McpApproval.NEVER),
        )
        provider = ProviderConfig(base_url=demo.base_url, model=demo.config.model)
        cwd = tmp_path_factory.mktemp("mcp-workspace")
        log = EventLog()
        gateway = Gateway(GatewayConfig(provider=provider, cwd=cwd, mcp_servers=servers))
        gateway.subscribe(log)
        try:
            for server in servers:
                ready(log, server.name)
            yield McpRig(gateway, log, witness, demo)
        finally:
            report = gateway.shutdown(timeout_s=20)
            witness.close()
            assert report.threads_left == []
