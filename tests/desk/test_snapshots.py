"""Snapshot of the desk after a stop: the partial reply stays, marked as stopped by the person.

Deterministic by construction: the first reply is exact (``reply with exactly:``); the second is
cut by the demo model's ``stall`` fault after a fixed number of tokens, so the partial text is
always the same; the receipt's milliseconds are pinned by the formatter; the URL, the clock,
animations and the cursor blink are fixed.
"""

from __future__ import annotations

from textual.pilot import Pilot

from demo_model.replies import reply_for, tokenize
from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.config import ConnectionInfo
from desk.widgets import AssistantReply, PromptInput
from tests.desk.kit import pinned_receipt, user_message, wait_until
from tui_gateway.gateway import Gateway

STALL_AFTER_TOKENS = 14
FIRST_PROMPT = "reply with exactly: Streaming **works**: every token arrives as it is made."
SECOND_PROMPT = "Explain how a stop reaches the model server"


def test_screen_after_a_stop(
    snap_compare: object, fast_server: DemoModelServer, fast_gateway: Gateway
) -> None:
    shown = ConnectionInfo("demo", "http://127.0.0.1:8080/v1", is_demo=True, source="--demo")
    app = DeskApp(
        fast_gateway,
        shown,
        clock=lambda: 0.0,
        receipt_formatter=pinned_receipt,
        handle_signals=False,
    )
    app.animation_level = "none"
    partial = "".join(tokenize(reply_for(user_message(SECOND_PROMPT)))[:STALL_AFTER_TOKENS])

    async def run_before(pilot: Pilot[object]) -> None:
        box = app.query_one(PromptInput)
        box.cursor_blink = False
        await wait_until(pilot, lambda: bool(app.status_bar.window_note), what="the window")
        box.text = FIRST_PROMPT
        await pilot.press("enter")
        await wait_until(
            pilot, lambda: any(r.outcome for r in app.transcript.query(AssistantReply))
        )
        fast_server.configure(fault="stall", fault_after_tokens=STALL_AFTER_TOKENS)
        box.text = SECOND_PROMPT
        await pilot.press("enter")
        await wait_until(pilot, lambda: len(app.transcript.query(AssistantReply)) == 2)
        second = app.transcript.query(AssistantReply).last()
        await wait_until(pilot, lambda: second.text == partial, what="the stalled partial")
        await pilot.press("escape")
        await wait_until(pilot, lambda: second.outcome == "interrupted", what="the stop")
        await wait_until(pilot, lambda: app.status_bar.state == "idle", what="idle")
        await pilot.pause()

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)  # type: ignore[operator]


STREAMING_REPLY = (
    "## Stopping a stream\n\nA stop closes the **socket** at once:\n\n"
    "- the server frees its slot\n- the partial reply stays\n\n"
    "```python\nagent.interrupt(StopRequest.by_user(Surface.DESK_KEY))\n```\n\n"
    "Then the workers exit and the receipt shows the milliseconds."
)
STREAMING_STALL_AFTER = 30


def test_screen_while_a_reply_streams(
    snap_compare: object, fast_server: DemoModelServer, fast_gateway: Gateway
) -> None:
    shown = ConnectionInfo("demo", "http://127.0.0.1:8080/v1", is_demo=True, source="--demo")
    app = DeskApp(fast_gateway, shown, clock=lambda: 0.0, handle_signals=False)
    app.animation_level = "none"
    prompt = "reply with exactly: " + STREAMING_REPLY
    partial = "".join(tokenize(reply_for(user_message(prompt)))[:STREAMING_STALL_AFTER])
    assert 0 < len(partial) < len(STREAMING_REPLY)

    async def run_before(pilot: Pilot[object]) -> None:
        box = app.query_one(PromptInput)
        box.cursor_blink = False
        await wait_until(pilot, lambda: bool(app.status_bar.window_note), what="the window")
        fast_server.configure(fault="stall", fault_after_tokens=STREAMING_STALL_AFTER)
        box.text = prompt
        await pilot.press("enter")
        await wait_until(pilot, lambda: len(app.transcript.query(AssistantReply)) == 1)
        reply = app.transcript.query(AssistantReply).last()
        await wait_until(pilot, lambda: reply.text == partial, what="the stalled partial")
        await wait_until(pilot, lambda: app.status_bar.state == "streaming", what="streaming")
        await pilot.pause()

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)  # type: ignore[operator]
