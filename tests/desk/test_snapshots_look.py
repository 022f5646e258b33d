"""Snapshots of how the desk looks: the first-run welcome, the light theme, 80x24, an error line,
and a turn stopped by the system.

Deterministic: the demo model streams as fast as it can, replies are exact
(``reply with exactly:``) or cut by the ``stall`` fault after a fixed number of tokens; the URL,
clock, receipt figures, animations and cursor blink are pinned; each test waits for the server's
context window (fetched off the UI thread at start) so the status bar is settled.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

from textual.pilot import Pilot

from agent.stops import StopRequest, Surface
from demo_model.replies import reply_for, tokenize
from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.config import ConnectionInfo
from desk.widgets import AssistantReply, PromptInput
from tests.desk.kit import pinned_receipt, user_message, wait_until
from tui_gateway.gateway import Gateway

SHOWN_URL = "http://127.0.0.1:8080/v1"
MARKDOWN_REPLY = (
    "reply with exactly: ## Plan\n\n"
    "1. **Read** the `config.toml`\n"
    "2. Switch the theme\n\n"
    "```python\ntheme = load('light')  # saved for next time\n```\n\n"
    "> Done: every colour comes from the theme."
)

RunBefore = Callable[[Pilot[object]], Awaitable[None]]


def _desk(gateway: Gateway, source: str = "no model server configured or found") -> DeskApp:
    shown = ConnectionInfo("demo", SHOWN_URL, is_demo=True, source=source)
    app = DeskApp(
        gateway, shown, clock=lambda: 0.0, receipt_formatter=pinned_receipt, handle_signals=False
    )
    app.animation_level = "none"
    return app


async def _settle(app: DeskApp, pilot: Pilot[object]) -> None:
    app.query_one(PromptInput).cursor_blink = False
    await wait_until(pilot, lambda: bool(app.status_bar.window_note), what="the window")


async def _send(app: DeskApp, pilot: Pilot[object], text: str) -> AssistantReply:
    before = len(app.transcript.query(AssistantReply))
    app.query_one(PromptInput).text = text
    await pilot.press("enter")
    await wait_until(pilot, lambda: len(app.transcript.query(AssistantReply)) > before)
    return app.transcript.query(AssistantReply).last()


async def _finish(app: DeskApp, pilot: Pilot[object], reply: AssistantReply) -> None:
    await wait_until(pilot, lambda: reply.outcome is not None, what="the outcome")
    await wait_until(pilot, lambda: app.status_bar.state == "idle", what="idle")
    await pilot.pause()


def test_first_run_welcome_with_the_demo_model(snap_compare: object, fast_gateway: Gateway) -> None:
    app = _desk(fast_gateway)

    async def run_before(pilot: Pilot[object]) -> None:
        await _settle(app, pilot)

    assert snap_compare(app, terminal_size=(100, 30), run_before=run_before)  # type: ignore[operator]


def test_light_theme(snap_compare: object, fast_gateway: Gateway, config_home: Path) -> None:
    (config_home / "desk").mkdir(parents=True)
    (config_home / "desk" / "config.toml").write_text('theme = "light"\n')
    app = _desk(fast_gateway, source="--demo")

    async def run_before(pilot: Pilot[object]) -> None:
        await _settle(app, pilot)
        await _finish(app, pilot, await _send(app, pilot, MARKDOWN_REPLY))

    assert snap_compare(app, terminal_size=(100, 32), run_before=run_before)  # type: ignore[operator]


def test_80x24(snap_compare: object, fast_gateway: Gateway) -> None:
    app = _desk(fast_gateway, source="--demo")

    async def run_before(pilot: Pilot[object]) -> None:
        await _settle(app, pilot)
        await _finish(app, pilot, await _send(app, pilot, MARKDOWN_REPLY))

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)  # type: ignore[operator]


def test_an_error_line(
    snap_compare: object, fast_gateway: Gateway, fast_server: DemoModelServer
) -> None:
    app = _desk(fast_gateway, source="--demo")

    async def run_before(pilot: Pilot[object]) -> None:
        await _settle(app, pilot)
        fast_server.configure(fault="http:503", fault_times=None)
        reply = await _send(app, pilot, "Is the server there?")
        await _finish(app, pilot, reply)
        assert reply.outcome == "failed"

    assert snap_compare(app, terminal_size=(100, 24), run_before=run_before)  # type: ignore[operator]


def test_stopped_by_the_system(
    snap_compare: object, fast_gateway: Gateway, fast_server: DemoModelServer
) -> None:
    app = _desk(fast_gateway, source="--demo")
    prompt = "Explain how a stop reaches the model server"
    partial = "".join(tokenize(reply_for(user_message(prompt)))[:14])

    async def run_before(pilot: Pilot[object]) -> None:
        await _settle(app, pilot)
        fast_server.configure(fault="stall", fault_after_tokens=14)
        reply = await _send(app, pilot, prompt)
        await wait_until(pilot, lambda: reply.text == partial, what="the stalled partial")
        stop = StopRequest.by_system(
            Surface.INACTIVITY, "no answer from the model server for 300 s"
        )
        fast_gateway.session_interrupt(app.session_id, stop, turn_id=reply.turn_id)
        await _finish(app, pilot, reply)
        assert reply.note.startswith("■ stopped by the system: no answer")

    assert snap_compare(app, terminal_size=(100, 24), run_before=run_before)  # type: ignore[operator]
