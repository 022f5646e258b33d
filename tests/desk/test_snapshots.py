"""Snapshot of the desk after a stop: the partial reply stays, marked as stopped by the person.

Deterministic by construction: the first reply is exact (``reply with exactly:``); the second is
cut by the demo model's ``stall`` fault after a fixed number of tokens, so the partial text is
always the same; the receipt's milliseconds are pinned by the formatter; the URL, the clock,
animations and the cursor blink are fixed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest
from textual.pilot import Pilot

from agent.demo_model.config import DemoConfig
from agent.demo_model.replies import reply_for, tokenize
from agent.demo_model.server import DemoModelServer
from agent.provider.client import ProviderConfig
from desk.app import DeskApp
from desk.config import ConnectionInfo
from desk.receipts import format_stop_receipt
from desk.widgets import AssistantReply, PromptInput
from tests.desk.desk_testkit import user_message, wait_until
from tui_gateway.events import StopReceipt
from tui_gateway.gateway import Gateway, GatewayConfig

STALL_AFTER_TOKENS = 14
FIRST_PROMPT = "reply with exactly: Streaming **works**: every token arrives as it is made."
SECOND_PROMPT = "Explain how a stop reaches the model server"


def pinned_receipt(receipt: StopReceipt) -> str:
    """The real formatter, with the measured figures replaced by fixed ones."""
    return format_stop_receipt(dataclasses.replace(receipt, closed_ms=3.0, exited_ms=4.0))


@pytest.fixture
def snapshot_server() -> Iterator[DemoModelServer]:
    server = DemoModelServer(DemoConfig(tokens_per_second=0))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def snapshot_gateway(snapshot_server: DemoModelServer) -> Iterator[Gateway]:
    provider = ProviderConfig(base_url=snapshot_server.base_url, model="demo")
    gateway = Gateway(GatewayConfig(provider=provider))
    try:
        yield gateway
    finally:
        gateway.shutdown(timeout_s=5.0)


def test_screen_after_a_stop(
    snap_compare: object, snapshot_server: DemoModelServer, snapshot_gateway: Gateway
) -> None:
    shown = ConnectionInfo("demo", "http://127.0.0.1:8080/v1", is_demo=True, source="--demo")
    app = DeskApp(
        snapshot_gateway,
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
        await wait_until(pilot, lambda: app.status_bar.context_window is not None, what="n_ctx")
        box.text = FIRST_PROMPT
        await pilot.press("enter")
        await wait_until(
            pilot, lambda: any(r.outcome for r in app.transcript.query(AssistantReply))
        )
        snapshot_server.configure(fault="stall", fault_after_tokens=STALL_AFTER_TOKENS)
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
