"""/init in the prompt box asks the model to write a starting AGENTS.md: a prompt like any
other (the model's write_file then asks the person first)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.context.instructions import INIT_PROMPT
from agent.provider.client import ProviderConfig
from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.widgets import UserPrompt
from tests.desk.kit import connection, submit, wait_until
from tui_gateway.gateway import Gateway, GatewayConfig

pytestmark = pytest.mark.anyio


@pytest.fixture
def workspace_gateway(demo_server: DemoModelServer, tmp_path: Path) -> Iterator[Gateway]:
    provider = ProviderConfig(base_url=demo_server.base_url, model="demo")
    gateway = Gateway(GatewayConfig(provider=provider, cwd=tmp_path))
    try:
        yield gateway
    finally:
        assert gateway.shutdown(timeout_s=5.0).threads_left == []


async def test_init_sends_the_prompt_that_asks_for_agents_md(
    workspace_gateway: Gateway, demo_server: DemoModelServer
) -> None:
    app = DeskApp(workspace_gateway, connection(demo_server.base_url), handle_signals=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await submit(pilot, "/init")

        def asked() -> bool:
            return any(
                r.messages and r.messages[-1].get("content") == INIT_PROMPT
                for r in demo_server.records.list()
            )

        await wait_until(pilot, asked, what="the /init request")
        prompts = [str(p.text) for p in app.transcript.query(UserPrompt)]
        assert prompts == [INIT_PROMPT]
