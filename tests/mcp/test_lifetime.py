"""No MCP server process outlives a gateway shutdown (desk's quit and kill -9 in a real terminal:
``test_desk_pty.py``; the guard's parent-death signal alone: ``test_guard.py``).

Each test server reports its process group (and the pid of a child it started in that group,
``--spawn-child``) to the witness; the test then ends desk's side one way or another and waits,
on pidfds, until every process of the group has exited. A server that does not exit when its
stdin ends and ignores SIGTERM (``--linger --ignore-sigterm``) needs the SIGKILL at the end of
the grace; after kill -9 of desk only the guard's parent-death signal is left to end it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.provider.client import ProviderConfig
from demo_model.server import DemoModelServer
from tests.mcp.conftest import alive_in_group, our_server, ready, wait_exited
from tests.mcp.witness import Witness
from tests.support import EventLog
from tui_gateway.gateway import Gateway, GatewayConfig

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")


@pytest.fixture
def witness() -> Iterator[Witness]:
    found = Witness()
    try:
        yield found
    finally:
        found.close()


def group_of(witness: Witness, name: str, since: int = 0) -> tuple[int, set[int]]:
    """The server's process group and its live members, once it reported its child."""
    started = witness.wait_event("started", since=since, name=name)
    spawned = witness.wait_event("spawned", since=since, pid=started["pid"])
    pgid = int(started["pgid"])
    members = alive_in_group(pgid)
    assert {int(started["pid"]), int(spawned["child"]), pgid} <= members  # guard, server, child
    return pgid, members


def test_a_gateway_shutdown_ends_every_server_group_even_a_stubborn_one(
    demo_server: DemoModelServer, witness: Witness, tmp_path: Path
) -> None:
    servers = (
        our_server("plain", witness, "--spawn-child"),
        our_server("hard", witness, "--spawn-child", "--ignore-sigterm", "--linger"),
    )
    provider = ProviderConfig(base_url=demo_server.base_url, model=demo_server.config.model)
    gateway = Gateway(GatewayConfig(provider=provider, cwd=tmp_path, mcp_servers=servers))
    log = EventLog()
    gateway.subscribe(log)
    groups = {}
    for server in servers:
        assert ready(log, server.name).state == "ready"
        groups[server.name] = group_of(witness, server.name)
    report = gateway.shutdown(timeout_s=20)
    assert report.threads_left == []
    for pgid, members in groups.values():
        assert wait_exited(members) == set()
        assert alive_in_group(pgid) == set()
    assert {s.state for s in gateway.mcp.statuses()} == {"stopped"}
