"""Snapshots of what the keyboard and the view work brought: a write_file approval with its diff,
the queue above the prompt box, and the "new output below" marker.

Deterministic by construction: the demo model answers at once or at a pinned pace, the clock is
pinned (durations read 0.0 s), the URL, animations and cursor blink are fixed, and the files a
diff is made from are written by the test.
"""

from __future__ import annotations

import json
from pathlib import Path

from textual.pilot import Pilot
from textual.widgets import Button

from agent.provider.client import ProviderConfig
from agent.provider.types import ChatMessage
from agent.store import SqliteStore
from demo_model.server import DemoModelServer
from desk.startup import Startup
from desk.widgets import PromptInput
from desk.widgets.approval_prompt import ApprovalPrompt
from tests.desk.kit import pin_gauge, wait_until
from tests.desk.saved_sessions_kit import SAVED_AT
from tests.desk.test_snapshots_tools_sessions import make_app, make_gateway, send
from tui_gateway.gateway import Gateway, GatewayConfig

OLD_FILE = """\
# Stop plan

1. Close the connection.
2. End the worker.
3. Book the stop.

Notes: keep the receipt.
"""

NEW_FILE = """\
# Stop plan

1. Close the connection at once.
2. End the worker and its children.
3. Book the stop to the right party.

Notes: keep the receipt.
Checked: nothing half written.
"""


def test_write_file_approval_with_its_diff(
    snap_compare: object, fast_server: DemoModelServer, tmp_path: Path
) -> None:
    (tmp_path / "plan.md").write_text(OLD_FILE)
    gateway = make_gateway(fast_server, tmp_path)
    app = make_app(gateway)
    call = "call tool write_file with " + json.dumps({"path": "plan.md", "content": NEW_FILE})

    async def run_before(pilot: Pilot[object]) -> None:
        await send(app, pilot, call)
        await wait_until(pilot, lambda: app.screen.query(ApprovalPrompt), what="the prompt")
        # The gauge reads 3 % or 8 % by the order its events came in (noted, not fixed): the
        # turn waits for the approval now, so it is set to what the picture shows.
        await pilot.pause()
        pin_gauge(app)
        app.query_one(PromptInput).cursor_blink = False
        await pilot.pause()

    try:
        assert snap_compare(app, terminal_size=(100, 36), run_before=run_before)  # type: ignore[operator]
    finally:
        gateway.shutdown(timeout_s=5.0)


def test_the_queue_above_the_prompt_box_with_one_prompt_being_edited(
    snap_compare: object, fast_server: DemoModelServer, tmp_path: Path
) -> None:
    fast_server.configure(fault="stall", fault_after_tokens=0, fault_times=1)  # the turn waits
    gateway = make_gateway(fast_server, tmp_path)
    app = make_app(gateway)

    async def run_before(pilot: Pilot[object]) -> None:
        await send(app, pilot, "Plan the release")
        await wait_until(pilot, lambda: app.running_turn is not None, what="the turn")
        for text in (
            "reply with exactly: the changelog",
            "Then tag the release and write the announcement\nwith the changes since 1.2",
            "reply with exactly: done",
        ):
            await send(app, pilot, text)
        await wait_until(pilot, lambda: len(app.widgets.queue.items) == 3, what="the queue")
        edit = app.widgets.queue.items[1].query_one(".edit", Button)
        edit.press()
        box = app.query_one(PromptInput)
        await wait_until(pilot, lambda: box.editing is not None, what="the edit")
        # the press lights the button for a moment: the picture is taken once it is out
        await wait_until(pilot, lambda: not edit.has_class("-active"), what="the press shown")
        await pilot.pause()

    try:
        assert snap_compare(app, terminal_size=(100, 30), run_before=run_before)  # type: ignore[operator]
    finally:
        gateway.shutdown(timeout_s=5.0)


def test_new_output_below_while_scrolled_up(
    snap_compare: object, fast_server: DemoModelServer, tmp_path: Path
) -> None:
    db = tmp_path / "desk.db"
    with SqliteStore(db, clock=lambda: SAVED_AT) as store:
        messages = []
        for n in range(1, 13):
            messages.append(ChatMessage("user", f"Question {n}: what does step {n} stop?"))
            messages.append(ChatMessage("assistant", f"Step {n} closes connection {n} at once."))
        store.sessions.create_session(
            "c2c2c2c2c2c2", title="Steps", model="demo", created_at=SAVED_AT, messages=messages
        )
    provider = ProviderConfig(base_url=fast_server.base_url, model="demo")
    gateway = Gateway(GatewayConfig(provider=provider), store=SqliteStore(db))
    app = make_app(gateway, Startup(resume=True, resume_id="c2c2c2c2c2c2"))

    async def run_before(pilot: Pilot[object]) -> None:
        await wait_until(
            pilot, lambda: app.controllers.sessions.resume_rendered_at is not None, what="render"
        )
        # The gateway's count and the window's source are on the status bar (it asks the
        # server in the background): the shot never races it.
        await wait_until(pilot, lambda: bool(app.status_bar.window_note), what="the window")
        app.query_one(PromptInput).cursor_blink = False
        await pilot.press("pageup")
        await app.view.add_note("a note added below while the person reads above")
        marker = app.view.follow_marker
        await wait_until(pilot, lambda: marker.has_class("-new"), what="the marker")
        await pilot.pause()

    try:
        assert snap_compare(app, terminal_size=(100, 24), run_before=run_before)  # type: ignore[operator]
    finally:
        gateway.shutdown(timeout_s=5.0)
