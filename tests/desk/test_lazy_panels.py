"""The hidden panels are built when first opened, not before the first frame, and then work
as if they had always been there: the console's command line takes the keys typed at once
after F2, the sessions list takes Ctrl+B's focus.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from textual.app import App
from textual.widgets import Button

from agent.provider.client import ProviderConfig
from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.widgets.compression_panel import CompressionPanel
from tests.desk.kit import connection, wait_until
from tui_gateway.gateway import Gateway, GatewayConfig

pytestmark = pytest.mark.anyio


@pytest.fixture
def app(demo_server: DemoModelServer) -> Iterator[DeskApp]:
    provider = ProviderConfig(base_url=demo_server.base_url, model="demo")
    gateway = Gateway(GatewayConfig(provider=provider))
    try:
        yield DeskApp(gateway, connection(demo_server.base_url), handle_signals=False)
    finally:
        assert gateway.shutdown(timeout_s=5.0).threads_left == []


async def test_hidden_panels_are_empty_until_opened_then_take_the_keys(app: DeskApp) -> None:
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        widgets = app.widgets
        hidden = (widgets.console_panel, widgets.compression_panel, widgets.sidebar)
        assert [len(panel.children) for panel in hidden] == [0, 0, 0]
        await pilot.press("f2", "h", "e", "l", "p")  # typed as fast as keys come
        panel = widgets.console_panel
        await wait_until(pilot, lambda: panel.input.value == "help", what="the typed line")
        assert panel.input.has_focus and widgets.prompt.text == ""
        await pilot.press("ctrl+b")
        await wait_until(pilot, lambda: widgets.sidebar.list_view.has_focus, what="the list")
        assert len(widgets.compression_panel.children) == 0  # no compression yet


async def test_a_panel_used_before_its_own_compose_has_its_children_at_once() -> None:
    # On a busy machine the first compression event can reach the panel before the panel's
    # own compose ran: its bar and Cancel button must be there all the same, and only once.
    class Host(App[None]):
        def on_mount(self) -> None:
            self.panel = CompressionPanel(id="compression")
            self.mount(self.panel)  # registered now, composed later
            self.panel.begin("turn-1")  # before its compose

    host = Host()
    async with host.run_test() as pilot:
        await pilot.pause()
        assert len(host.panel.query(Button)) == 1
        assert host.panel.running and not host.panel.query_one(Button).disabled
