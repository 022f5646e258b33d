"""MCP servers in the desk: a failed server is one line in the transcript and the status bar, it
goes from the status bar once the server is back, and F1 names ``/mcp``.

The failing server is a command that does not exist: the guard says so at once (no Python
server to start), so the desk shows the line soon after it starts.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.widgets import Static

from agent.provider.client import ProviderConfig
from contract.mcp_events import McpServerChanged, McpState
from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.config import ConnectionInfo
from desk.screens.help_screen import HelpScreen
from tests.desk.kit import wait_until
from tui_gateway.gateway import Gateway, GatewayConfig
from tui_gateway.settings.mcp_settings import McpServerSettings

pytestmark = pytest.mark.anyio

LINE = (
    "mcp: nowhere failed: exited with code 127: cannot run 'desk-no-such-mcp-server': "
    "No such file or directory"
)


@pytest.fixture
def mcp_gateway(demo_server: DemoModelServer, tmp_path: Path) -> Iterator[Gateway]:
    provider = ProviderConfig(base_url=demo_server.base_url, model="demo")
    broken = McpServerSettings(name="nowhere", command="desk-no-such-mcp-server")
    gateway = Gateway(GatewayConfig(provider=provider, cwd=tmp_path, mcp_servers=(broken,)))
    try:
        yield gateway
    finally:
        assert gateway.shutdown(timeout_s=10.0).threads_left == []


def notes(app: DeskApp) -> list[str]:
    return [str(note.render()) for note in app.query(".note").results(Static)]


async def test_a_failed_server_is_one_line_in_the_transcript_and_the_status_bar(
    mcp_gateway: Gateway, demo_server: DemoModelServer
) -> None:
    app = DeskApp(mcp_gateway, ConnectionInfo("demo", demo_server.base_url), handle_signals=False)
    async with app.run_test(size=(200, 30)) as pilot:
        await wait_until(pilot, lambda: any(LINE in n for n in notes(app)), what="the mcp line")
        assert [n for n in notes(app) if "mcp:" in n] == [f"⚠ {LINE}"]
        assert LINE in app.status_bar.turn_text()
        # The server back (as the gateway would say after /mcp restart): the status bar clears.
        ready = McpServerChanged(name="nowhere", state=McpState.READY, transport="stdio")
        await app.controllers.mcp.changed(ready)
        assert "mcp:" not in app.status_bar.turn_text()
        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen)
        slash = dict(dict(app.screen.sections)["Slash commands (typed in the prompt box)"])
        assert "/mcp [restart NAME]" in slash
