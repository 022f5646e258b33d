"""The status bar's model, server and context gauge; quitting while turns run."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator

import pytest

from agent.provider.client import ProviderConfig
from agent.tokens import tokens_in_chars
from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.config import ConnectionInfo
from desk.widgets import PromptInput
from desk.widgets.status_bar import context_percent, server_text
from tests.desk.kit import submit_and_get_reply, wait_until
from tui_gateway.gateway import Gateway, GatewayConfig, ShutdownReport

pytestmark = pytest.mark.anyio


def test_server_text_names_the_demo_or_host_and_port() -> None:
    demo = ConnectionInfo("demo", "http://127.0.0.1:4444/v1", is_demo=True)
    assert server_text(demo) == "demo · demo model · ctx –"
    real = ConnectionInfo("qwen2.5-coder-32b-instruct-q4_k_m", "http://gpu-box:8080/v1")
    assert server_text(real, percent=37) == "qwen2.5-coder-32b-instruct-… · gpu-box:8080 · ctx 37%"


async def test_the_gauge_shows_the_next_request_against_the_window_and_where_it_came_from(
    desk_app: DeskApp, demo_server: DemoModelServer
) -> None:
    async with desk_app.run_test(size=(120, 24)) as pilot:
        status = desk_app.status_bar
        await wait_until(pilot, lambda: status.window_note != "", what="the window")
        assert status.context_window == demo_server.config.n_ctx
        # Before any turn the gateway counts what the first request carries: the tools.
        assert status.context_used is not None and 0 < status.context_used < 2_000
        before = context_percent(status.context_used, demo_server.config.n_ctx)
        assert status.server_side_text() == (
            f"demo · demo model · ctx {before}% · window 8,192 from the server"
        )
        reply = await submit_and_get_reply(desk_app, pilot, "reply with exactly: ok")
        await wait_until(pilot, lambda: reply.outcome is not None, what="the reply")
        await wait_until(pilot, lambda: status.window_note != "", what="the gateway's window")
        (record,) = [r for r in demo_server.records.list() if "chat" in r.path]
        # The next request carries the last prompt (tools included) and its reply, as the
        # server counted them (the count is calibrated by the last usage).
        carried = record.prompt_tokens + record.tokens_generated
        assert status.context_used is not None and abs(status.context_used - carried) <= 8
        percent = context_percent(status.context_used, demo_server.config.n_ctx)
        used = f"Σ {record.prompt_tokens:,} in {record.tokens_generated:,} out"  # the server's
        assert status.server_side_text().endswith(
            f"ctx {percent}% · {used} · window {demo_server.config.n_ctx:,} from the server"
        )


async def test_a_stopped_turn_still_moves_the_gauge_by_its_prompt_and_partial_reply(
    desk_app: DeskApp, demo_server: DemoModelServer
) -> None:
    demo_server.configure(tokens_per_second=20.0)
    async with desk_app.run_test(size=(80, 24)) as pilot:
        status = desk_app.status_bar
        first = await submit_and_get_reply(desk_app, pilot, "reply with exactly: ok")
        await wait_until(pilot, lambda: first.outcome is not None, what="the first reply")
        await wait_until(pilot, lambda: status.window_note != "", what="the gateway's window")
        before = status.context_used
        assert before is not None
        prompt = "Tell me about stopping streams " + "x" * 400
        reply = await submit_and_get_reply(desk_app, pilot, prompt)
        await wait_until(pilot, lambda: len(reply.text) > 8, what="some reply")
        await pilot.press("escape")
        await wait_until(pilot, lambda: reply.outcome == "interrupted", what="the stop")
        grown = (len(prompt) + len(reply.text)) // 8  # the server sent no count for this turn
        await wait_until(
            pilot, lambda: (status.context_used or 0) >= before + grown, what="the gauge to grow"
        )


async def test_the_prompt_being_typed_counts_in_the_gauge(
    desk_app: DeskApp, demo_server: DemoModelServer, gateway: Gateway
) -> None:
    async with desk_app.run_test(size=(80, 24)) as pilot:
        status = desk_app.status_bar
        await wait_until(pilot, lambda: status.window_note != "", what="the gateway's count")
        assert status.context_pending == 0
        desk_app.query_one(PromptInput).insert("word " * 900)
        await wait_until(pilot, lambda: status.context_pending > 0, what="the typed prompt")
        # at the session's ratio, measured by the server's count of its first request
        calibration = gateway.context_budget(desk_app.session_id).calibration
        assert calibration.measured
        ratio = round(calibration.chars_per_token, 3)
        assert status.context_pending == tokens_in_chars(len("word " * 900), ratio)
        assert "ctx 0%" not in status.server_side_text()


class _StuckWorkerGateway(Gateway):
    """A gateway whose shutdown waits for the test, then reports a worker that outlived it."""

    def __init__(self, config: GatewayConfig) -> None:
        super().__init__(config)
        self.release = threading.Event()

    def shutdown(self, timeout_s: float | None = None) -> ShutdownReport:
        self.release.wait(10.0)
        report = super().shutdown(timeout_s)
        return dataclasses.replace(report, threads_left=["desk-turn-stuck"])


@pytest.fixture
def stuck_gateway(demo_server: DemoModelServer) -> Iterator[_StuckWorkerGateway]:
    provider = ProviderConfig(base_url=demo_server.base_url, model="demo")
    gateway = _StuckWorkerGateway(GatewayConfig(provider=provider, shutdown_timeout_s=3.0))
    try:
        yield gateway
    finally:
        gateway.release.set()
        gateway.shutdown(timeout_s=5.0)


async def test_quit_says_stopping_then_that_the_bound_expired_and_exits_anyway(
    stuck_gateway: _StuckWorkerGateway, demo_server: DemoModelServer
) -> None:
    info = ConnectionInfo("demo", demo_server.base_url, is_demo=True)
    app = DeskApp(stuck_gateway, info, handle_signals=False)
    app.controllers.quit.exit_note_s = 0.05
    async with app.run_test(size=(80, 24)) as pilot:
        reply = await submit_and_get_reply(app, pilot, "Tell me a long story")
        await wait_until(pilot, lambda: reply.text, what="streaming")
        await pilot.press("ctrl+q")
        assert app.status_bar.notice == "■ stopping 1 turn…"
        assert app.status_bar.turn_text() == "■ stopping 1 turn…"
        stuck_gateway.release.set()
        await wait_until(
            pilot, lambda: app.status_bar.notice.startswith("gave up"), what="the bound note"
        )
        assert app.exit_note == (
            "gave up waiting after 3 s: 1 worker still running (desk-turn-stuck); exiting anyway"
        )
        await wait_until(None, lambda: app.return_code is not None, what="the exit")
    assert app.return_code == 0


async def test_ctrl_q_read_by_the_input_thread_stops_the_turn_while_the_ui_is_busy(
    desk_app: DeskApp, gateway: Gateway, demo_server: DemoModelServer
) -> None:
    # The UI thread's loop runs this test: while the test does not await, the UI is as busy
    # as it gets. Ctrl+Q as the terminal's input thread reads it must still stop the turn.
    demo_server.configure(tokens_per_second=50.0)
    async with desk_app.run_test(size=(120, 30)) as pilot:
        reply = await submit_and_get_reply(desk_app, pilot, "Tell me about stopping streams")
        await wait_until(pilot, lambda: len(reply.text) > 10, what="streamed text")
        reader = threading.Thread(target=desk_app.quit_from_input_thread, name="textual-input")
        reader.start()
        reader.join(10)
        record = demo_server.records.wait_for_record(
            lambda r: r.peer_closed_at is not None, timeout=10.0
        )
        assert record is not None  # the server saw the close with the UI loop held
        assert desk_app.is_running and desk_app.widgets.status.notice == ""  # not shown yet
        await pilot.press("ctrl+q")  # the key reaches the app: it shows the quit and exits
    assert desk_app.return_code == 0
    report = desk_app.shutdown_report
    assert report is not None and report.turns_stopped == 1
