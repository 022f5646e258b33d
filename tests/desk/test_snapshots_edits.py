"""Snapshots of an edit_file approval (the diff it will make) and of /undo (the diff it reverted).

Deterministic as the other snapshots: the demo model answers at once, the clock is pinned,
animations and the cursor blink are off; the workspace's file names and text are fixed (the
temporary folder's path is never on screen: paths are shown relative to the workspace).
"""

from __future__ import annotations

import json
from pathlib import Path

from textual.pilot import Pilot

from agent.provider.client import ProviderConfig
from agent.store import SqliteStore
from demo_model.server import DemoModelServer
from desk.widgets.approval_prompt import ApprovalPrompt
from desk.widgets.change_preview import ChangePreview
from tests.desk.kit import pin_gauge, wait_until
from tests.desk.test_snapshots_tools_sessions import make_app, send
from tui_gateway.gateway import Gateway, GatewayConfig

NOTES = "# Plan\n\n- read the code\n- write the tests\n- ship it\n"


def edit_prompt() -> str:
    args = {
        "path": "notes.md",
        "old": "- ship it\n",
        "new": "- ship it on Friday\n- tell the team\n",
    }
    return "call tool edit_file with " + json.dumps(args)


def make_gateway(
    server: DemoModelServer, cwd: Path, store: SqliteStore | None = None, **options: object
) -> Gateway:
    provider = ProviderConfig(base_url=server.base_url, model="demo")
    config = GatewayConfig(provider=provider, cwd=cwd, **options)  # type: ignore[arg-type]
    return Gateway(config, store=store)


def test_edit_file_approval(
    snap_compare: object, fast_server: DemoModelServer, tmp_path: Path
) -> None:
    (tmp_path / "notes.md").write_text(NOTES)
    gateway = make_gateway(fast_server, tmp_path)
    app = make_app(gateway)

    async def run_before(pilot: Pilot[object]) -> None:
        await send(app, pilot, edit_prompt())
        await wait_until(
            pilot, lambda: app.screen.query(ApprovalPrompt), what="the approval prompt"
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


def test_undo_shows_the_diff_it_reverted(
    snap_compare: object, fast_server: DemoModelServer, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.md").write_text(NOTES)
    store = SqliteStore(tmp_path / "desk.db", clock=lambda: 1_700_000_000.0)
    gateway = make_gateway(fast_server, work, store, approvals=False)
    app = make_app(gateway)

    async def run_before(pilot: Pilot[object]) -> None:
        await send(app, pilot, edit_prompt())
        await wait_until(
            pilot, lambda: "Friday" in (work / "notes.md").read_text(), what="the edit"
        )
        await wait_until(pilot, lambda: not gateway_busy(gateway), what="the turn's end")
        await send(app, pilot, "/undo")
        await wait_until(pilot, lambda: app.screen.query(ChangePreview), what="the undo diff")
        assert (work / "notes.md").read_text() == NOTES
        await pilot.pause()

    try:
        assert snap_compare(app, terminal_size=(100, 30), run_before=run_before)  # type: ignore[operator]
    finally:
        gateway.shutdown(timeout_s=5.0)


def gateway_busy(gateway: Gateway) -> bool:
    """True while a turn runs in any of the gateway's sessions."""
    return any(info.running for info in gateway.session_list())
