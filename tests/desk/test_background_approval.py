"""A background child agent (one that outlived its parent's turn) that waits for an approval:
the status bar says so while no turn runs, and Shift+Tab from the prompt box reaches its card.
Over a real gateway and the demo model."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.provider.client import ProviderConfig
from contract.events import MessageComplete
from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.widgets.approval_prompt import ApprovalPrompt
from desk.widgets.status_bar import StatusBar
from tests.desk.kit import answer_approval, connection, submit, wait_until
from tests.support import EventLog
from tui_gateway.gateway import Gateway, GatewayConfig

pytestmark = pytest.mark.anyio


@pytest.fixture
def gateway(demo_server: DemoModelServer, tmp_path: Path) -> Iterator[tuple[Gateway, EventLog]]:
    demo_server.configure(slots=3)
    provider = ProviderConfig(base_url=demo_server.base_url, model="demo")
    gw = Gateway(GatewayConfig(provider=provider, cwd=tmp_path, approvals=True))
    log = EventLog()
    gw.subscribe(log)
    try:
        yield gw, log
    finally:
        assert gw.shutdown(timeout_s=5.0).threads_left == []


async def test_a_background_child_waiting_for_approval_says_so_while_idle(
    gateway: tuple[Gateway, EventLog], demo_server: DemoModelServer
) -> None:
    gw, log = gateway
    app = DeskApp(gw, connection(demo_server.base_url), handle_signals=False)
    shell = "call tool shell with " + json.dumps({"command": "echo late"})
    async with app.run_test(size=(120, 40)) as pilot:
        await submit(pilot, f"delegate in background: {shell}")
        await wait_until(pilot, lambda: log.of_type(MessageComplete), what="the turn's end")

        def prompt() -> ApprovalPrompt | None:
            return next(app.screen.query(ApprovalPrompt).results(ApprovalPrompt), None)

        await wait_until(pilot, prompt, what="the child's approval card")
        await wait_until(pilot, lambda: app.status_bar.state == "idle", what="idle")
        await wait_until(
            pilot,
            lambda: "1 agent waiting for approval" in app.status_bar.turn_text(),
            what="the status bar saying the agent waits for an approval",
        )
        card = prompt()
        assert card is not None
        await pilot.press("shift+tab")  # from the prompt box, straight to the card
        await wait_until(pilot, lambda: card.has_focus_within, what="the card focused")
        await answer_approval(pilot, card, "y")
        await wait_until(pilot, lambda: card.decision == "once", what="the answer")
        await wait_until(
            pilot, lambda: "waiting" not in app.status_bar.turn_text(), what="no wait said"
        )


@pytest.mark.parametrize(
    ("agents", "waiting", "said"),
    [
        (1, 0, "1 agent running"),
        (1, 1, "1 agent waiting for approval"),
        (2, 2, "2 agents waiting for approval"),
        (3, 1, "3 agents running, 1 waiting for approval"),
    ],
)
async def test_the_status_bar_counts_agents_waiting_for_approval(
    agents: int, waiting: int, said: str
) -> None:
    bar = StatusBar(connection())
    bar.agents, bar.agents_waiting = agents, waiting
    assert said in bar.turn_text()
