"""A quit does not wait the SDK's 2 s for an MCP server to exit by itself once its stdin closed:
it gives it :data:`agent.mcp.stdio.QUIT_EXIT_WAIT_S`, then ends its group (a quit bounded
below 2 s ends such a server in time; with the SDK's wait the server outlived the bound)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.mcp.stdio import QUIT_EXIT_WAIT_S
from agent.provider.client import ProviderConfig
from demo_model.server import DemoModelServer
from tests.mcp.conftest import alive_in_group, our_server, ready, wait_exited
from tests.mcp.witness import Witness
from tests.support import EventLog
from tui_gateway.gateway import Gateway, GatewayConfig

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")

BOUND_S = 1.5
"""The quit's bound here: under the SDK's own 2 s wait, well over the quit's wait."""


@pytest.fixture
def witness() -> Iterator[Witness]:
    found = Witness()
    try:
        yield found
    finally:
        found.close()


def test_a_quit_ends_servers_that_stay_after_their_stdin_closed_within_its_bound(
    demo_server: DemoModelServer, witness: Witness, tmp_path: Path
) -> None:
    assert QUIT_EXIT_WAIT_S < BOUND_S / 2
    # --linger: the server does not exit when its stdin ends (it waits for a signal)
    servers = (our_server("one", witness, "--linger"), our_server("two", witness, "--linger"))
    provider = ProviderConfig(base_url=demo_server.base_url, model=demo_server.config.model)
    gateway = Gateway(GatewayConfig(provider=provider, cwd=tmp_path, mcp_servers=servers))
    log = EventLog()
    gateway.subscribe(log)
    groups = {}
    for server in servers:
        assert ready(log, server.name).state == "ready"
        started = witness.wait_event("started", name=server.name)
        groups[server.name] = int(started["pgid"])
    members = {pid for pgid in groups.values() for pid in alive_in_group(pgid)}
    report = gateway.shutdown(timeout_s=BOUND_S)
    assert report.threads_left == []  # no server outlived the quit's bound
    assert wait_exited(members) == set()
    assert {s.state for s in gateway.mcp.statuses()} == {"stopped"}
