"""While a tool call waits for the person's approval the status bar says so, not only "⚙ tool"
and a ticking time: for the running turn's own call and for a child agent's (a delegate that
runs in the foreground), and it stops saying so once the call is answered or the turn stopped.
Over a real gateway and the demo model; the shell runs for real in ``tmp_path``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.provider.client import ProviderConfig
from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.widgets.approval_prompt import ApprovalPrompt
from desk.widgets.status_bar import APPROVAL_TEXT
from tests.desk.kit import answer_approval, connection, submit, wait_until
from tui_gateway.gateway import Gateway, GatewayConfig

pytestmark = pytest.mark.anyio


@pytest.fixture
def tool_gateway(demo_server: DemoModelServer, tmp_path: Path) -> Iterator[Gateway]:
    demo_server.configure(slots=2)  # a child agent's request beside its parent's
    provider = ProviderConfig(base_url=demo_server.base_url, model="demo")
    gateway = Gateway(GatewayConfig(provider=provider, cwd=tmp_path, approvals=True))
    try:
        yield gateway
    finally:
        assert gateway.shutdown(timeout_s=5.0).threads_left == []


@pytest.fixture
def app(tool_gateway: Gateway, demo_server: DemoModelServer) -> DeskApp:
    return DeskApp(tool_gateway, connection(demo_server.base_url), handle_signals=False)


def shell(command: str) -> str:
    return "call tool shell with " + json.dumps({"command": command})


def status_line(app: DeskApp) -> str:
    """The status bar's row as the terminal shows it."""
    region = app.status_bar.region
    strips = app.screen._compositor.render_strips()
    return "".join(s.text for s in strips[region.y])[region.x : region.right]


async def waiting_prompt(app: DeskApp, pilot: object) -> ApprovalPrompt:
    def shown() -> ApprovalPrompt | None:
        prompts = app.screen.query(ApprovalPrompt).results(ApprovalPrompt)
        return next((p for p in prompts if p.waiting), None)

    await wait_until(pilot, shown, what="the approval prompt")  # type: ignore[arg-type]
    prompt = shown()
    assert prompt is not None
    return prompt


async def says_approval(app: DeskApp, pilot: object) -> None:
    await wait_until(
        pilot,  # type: ignore[arg-type]
        lambda: APPROVAL_TEXT in status_line(app),
        what="the status bar saying the turn waits for the person's approval",
    )


async def test_the_status_bar_says_a_call_waits_for_your_approval_until_it_is_answered(
    app: DeskApp, tmp_path: Path
) -> None:
    async with app.run_test(size=(100, 30)) as pilot:
        await submit(pilot, shell("echo hi"))
        prompt = await waiting_prompt(app, pilot)
        await says_approval(app, pilot)
        assert status_line(app).lstrip().startswith("⚙ tool ")  # with the turn's time

        await answer_approval(pilot, prompt, "y")
        await wait_until(
            pilot, lambda: APPROVAL_TEXT not in status_line(app), what="the answer taken"
        )
        await wait_until(pilot, lambda: app.running_turn is None, what="the turn's end")
        assert APPROVAL_TEXT not in status_line(app)


async def test_a_stop_while_a_call_waits_for_approval_ends_the_waiting_line(app: DeskApp) -> None:
    async with app.run_test(size=(100, 30)) as pilot:
        await submit(pilot, shell("echo never"))
        await waiting_prompt(app, pilot)
        await says_approval(app, pilot)
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.running_turn is None, what="the turn's end")
        assert APPROVAL_TEXT not in status_line(app)
        assert app.status_bar.approvals == 0


async def test_a_child_agents_call_waiting_for_approval_is_said_while_its_parent_runs(
    app: DeskApp,
) -> None:
    async with app.run_test(size=(100, 30)) as pilot:
        await submit(pilot, f"delegate: {shell('echo child')}")
        prompt = await waiting_prompt(app, pilot)
        assert app.running_turn is not None  # the parent waits for its child
        await says_approval(app, pilot)

        await answer_approval(pilot, prompt, "n")
        await wait_until(
            pilot, lambda: APPROVAL_TEXT not in status_line(app), what="the answer taken"
        )
        await wait_until(pilot, lambda: app.running_turn is None, what="the turn's end")


async def test_a_narrow_status_bar_still_says_the_approval_is_awaited(app: DeskApp) -> None:
    async with app.run_test(size=(44, 20)) as pilot:
        await submit(pilot, shell("echo hi"))
        await waiting_prompt(app, pilot)
        await wait_until(
            pilot, lambda: "approval" in status_line(app), what="the short form of the line"
        )
