"""A quit that waits for MCP servers says so in the status bar, then exits."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.provider.client import ProviderConfig
from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.config import ConnectionInfo
from desk.controllers.quit import stopping_notice
from tests.desk.kit import wait_until
from tests.mcp.conftest import our_server
from tui_gateway.gateway import Gateway, GatewayConfig

pytestmark = pytest.mark.anyio


@pytest.fixture
def mcp_gateway(demo_server: DemoModelServer, tmp_path: Path) -> Iterator[Gateway]:
    # --linger --ignore-sigterm: the server stays until the guard's SIGKILL, so the quit waits
    servers = (our_server("slow", None, "--linger", "--ignore-sigterm"),)
    provider = ProviderConfig(base_url=demo_server.base_url, model="demo")
    gateway = Gateway(GatewayConfig(provider=provider, cwd=tmp_path, mcp_servers=servers))
    try:
        yield gateway
    finally:
        gateway.shutdown(timeout_s=10.0)


def test_the_notice_names_what_the_quit_waits_for() -> None:
    assert stopping_notice(0) == "quitting…"
    assert stopping_notice(1) == "■ stopping 1 turn…"
    assert stopping_notice(2, 1) == "■ stopping 2 turns, 1 MCP server…"
    assert stopping_notice(0, 2) == "■ stopping 2 MCP servers…"


async def test_quit_says_it_stops_the_mcp_servers_then_exits(
    mcp_gateway: Gateway, demo_server: DemoModelServer
) -> None:
    info = ConnectionInfo("demo", demo_server.base_url, is_demo=True)
    app = DeskApp(mcp_gateway, info, handle_signals=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(
            pilot, lambda: app.controllers.mcp.running == 1, what="the MCP server ready"
        )
        said: list[str] = []

        def heard(notice: str) -> None:
            said.append(notice)

        app.watch(app.status_bar, "notice", heard, init=False)
        await pilot.press("ctrl+q")
        await wait_until(None, lambda: app.return_code is not None, what="the exit")
    assert said[0] == "■ stopping 1 MCP server…"  # then "quitting…" once it has ended
    assert app.return_code == 0
    assert {s.state for s in mcp_gateway.mcp.statuses()} == {"stopped"}
