"""On a narrow terminal the approval card keeps all its buttons in sight: shorter labels, then
one under the other; a click on Deny still denies. Over a real gateway and the demo model."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.cells import cell_len
from textual.widgets import Button

from agent.provider.client import ProviderConfig
from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.widgets.approval_prompt import ApprovalPrompt, choices_fit
from tests.desk.kit import click_until, connection, submit, wait_until
from tui_gateway.gateway import Gateway, GatewayConfig

pytestmark = pytest.mark.anyio


@pytest.fixture
def gateway(demo_server: DemoModelServer, tmp_path: Path) -> Iterator[Gateway]:
    provider = ProviderConfig(base_url=demo_server.base_url, model="demo")
    gateway = Gateway(GatewayConfig(provider=provider, cwd=tmp_path, approvals=True))
    try:
        yield gateway
    finally:
        assert gateway.shutdown(timeout_s=5.0).threads_left == []


@pytest.fixture
def app(gateway: Gateway, demo_server: DemoModelServer) -> DeskApp:
    return DeskApp(gateway, connection(demo_server.base_url), handle_signals=False)


def shown_whole(button: Button, prompt: ApprovalPrompt) -> bool:
    """The button's whole label is on screen, inside the card."""
    region, card = button.region, prompt.content_region
    label = str(button.label)
    return (
        region.width >= cell_len(label) + 2
        and region.height >= 1
        and card.x <= region.x
        and region.right <= card.right
        and region.right <= button.screen.size.width
    )


@pytest.mark.parametrize("width", [120, 60, 40, 30, 24])
async def test_every_button_of_the_card_is_in_sight_and_deny_denies(
    app: DeskApp, width: int
) -> None:
    async with app.run_test(size=(width, 40)) as pilot:
        await submit(pilot, "call tool shell with " + json.dumps({"command": "echo narrow"}))

        def found() -> ApprovalPrompt | None:
            return next(app.screen.query(ApprovalPrompt).results(ApprovalPrompt), None)

        await wait_until(pilot, found, what="the approval prompt")
        prompt = found()
        assert prompt is not None
        buttons = list(prompt.query(Button).results(Button))
        assert [b.id for b in buttons] == ["approve-once", "approve-always", "approve-deny"]
        # The labels fit the card's width once it is laid out (a frame may come first, under
        # load, with the labels chosen for the width before)
        await wait_until(
            pilot,
            lambda: all(shown_whole(button, prompt) for button in buttons),
            what=f"every label whole at {width} columns",
        )
        if width >= 120:
            assert "(this session)" in str(buttons[1].label)  # room for the whole label
        deny = buttons[2]
        await click_until(pilot, deny, lambda: prompt.answer == "deny", what="the denial")
        await wait_until(pilot, lambda: prompt.decision == "deny", what="the gateway's answer")


def test_the_buttons_give_way_in_order_as_the_card_narrows() -> None:
    assert choices_fit(80) == "wide"
    assert choices_fit(40) == "narrow"
    assert choices_fit(20) == "stacked"


async def test_a_waiting_card_survives_a_window_squeezed_to_one_column(app: DeskApp) -> None:
    async with app.run_test(size=(120, 30)) as pilot:
        await submit(pilot, "call tool shell with " + json.dumps({"command": "echo tiny"}))
        await wait_until(pilot, lambda: app.screen.query(ApprovalPrompt), what="the prompt")
        await pilot.pause()
        prompt = app.screen.query_one(ApprovalPrompt)
        always = prompt.query_one("#approve-always", Button)
        before = str(always.label)
        for width in (40, 24, 14, 10, 5, 2, 1):
            for height in (1, 20):
                await pilot.resize_terminal(width, height)
                await pilot.pause()
        await pilot.resize_terminal(120, 30)
        await pilot.pause()
        assert prompt.waiting and str(always.label) == before == "a  Allow always (this session)"
