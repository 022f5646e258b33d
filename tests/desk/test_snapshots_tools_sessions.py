"""Snapshots of a tool card running, an approval prompt, and the sessions sidebar.

Deterministic by construction: the demo model answers at once (``tokens_per_second=0``); the
shell command prints fixed lines and then sleeps, so the card is caught running with its output
tail; the clock is pinned (durations read 0.0 s); the URL, animations, cursor blink, the
database's clock and the sidebar's "now" are fixed.
"""

from __future__ import annotations

import json
from pathlib import Path

from textual.pilot import Pilot

from agent.provider.client import ProviderConfig
from agent.store import SqliteStore
from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.startup import Startup
from desk.widgets import PromptInput
from desk.widgets.approval_prompt import ApprovalPrompt
from tests.desk.kit import connection, pin_gauge, wait_until
from tests.desk.saved_sessions_kit import SAVED_AT, build_store
from tui_gateway.gateway import Gateway, GatewayConfig


def make_gateway(server: DemoModelServer, cwd: Path, **options: object) -> Gateway:
    provider = ProviderConfig(base_url=server.base_url, model="demo")
    return Gateway(GatewayConfig(provider=provider, cwd=cwd, **options))  # type: ignore[arg-type]


def make_app(gateway: Gateway, startup: Startup | None = None) -> DeskApp:
    app = DeskApp(gateway, connection(), clock=lambda: 0.0, handle_signals=False, startup=startup)
    app.animation_level = "none"
    return app


async def send(app: DeskApp, pilot: Pilot[object], text: str) -> None:
    box = app.query_one(PromptInput)
    box.cursor_blink = False
    box.text = text
    await pilot.press("enter")


def tool_prompt(command: str) -> str:
    return "call tool shell with " + json.dumps({"command": command})


def test_tool_card_running(
    snap_compare: object, fast_server: DemoModelServer, tmp_path: Path
) -> None:
    gateway = make_gateway(fast_server, tmp_path, approvals=False)
    app = make_app(gateway)

    async def run_before(pilot: Pilot[object]) -> None:
        await send(app, pilot, tool_prompt("echo building; echo step 2 of 3; sleep 30"))
        await wait_until(pilot, lambda: app.controllers.tools.cards, what="the card")
        card = app.controllers.tools.cards[0]
        await wait_until(pilot, lambda: card.output == "building\nstep 2 of 3\n", what="output")
        # The gauge reads 3 % or 8 % by whether the server's count came first (see the approval
        # snapshots): the command runs for 30 s now, so it is set to what the picture shows.
        await pilot.pause()
        pin_gauge(app)

    try:
        assert snap_compare(app, terminal_size=(100, 30), run_before=run_before)  # type: ignore[operator]
    finally:
        gateway.shutdown(timeout_s=5.0)


def test_approval_prompt(
    snap_compare: object, fast_server: DemoModelServer, tmp_path: Path
) -> None:
    gateway = make_gateway(fast_server, tmp_path)
    app = make_app(gateway)

    async def run_before(pilot: Pilot[object]) -> None:
        await send(app, pilot, tool_prompt("rm -rf build && make release"))
        await wait_until(
            pilot,
            lambda: app.screen.query(ApprovalPrompt),
            what="the approval prompt",
        )
        # The gauge reads 3 % or 8 % by the order its events came in (noted, not fixed): the
        # turn waits for the approval now, so it is set to what the picture shows.
        await pilot.pause()
        pin_gauge(app)
        await pilot.pause()

    try:
        assert snap_compare(app, terminal_size=(100, 30), run_before=run_before)  # type: ignore[operator]
    finally:
        gateway.shutdown(timeout_s=5.0)


def test_sessions_sidebar_with_two_sessions(
    snap_compare: object, fast_server: DemoModelServer, tmp_path: Path
) -> None:
    db = tmp_path / "desk.db"
    build_store(db)
    provider = ProviderConfig(base_url=fast_server.base_url, model="demo")
    gateway = Gateway(GatewayConfig(provider=provider), store=SqliteStore(db))
    startup = Startup(resume=True, wall_clock=lambda: SAVED_AT + 3600 + 300)
    app = make_app(gateway, startup)

    async def run_before(pilot: Pilot[object]) -> None:
        await wait_until(
            pilot,
            lambda: app.controllers.sessions.resume_rendered_at is not None,
            what="the render",
        )
        app.query_one(PromptInput).cursor_blink = False
        await wait_until(pilot, lambda: app.status_bar.window_note, what="the gateway's count")
        await pilot.press("ctrl+b")
        await wait_until(pilot, lambda: len(app.widgets.sidebar.items) == 2, what="the list")
        await pilot.pause()

    try:
        assert snap_compare(app, terminal_size=(100, 30), run_before=run_before)  # type: ignore[operator]
    finally:
        gateway.shutdown(timeout_s=5.0)
