"""Pilot tests of the stop path: Esc, the Stop button, Ctrl+C, Ctrl+Q, faults, queued prompts.

Each runs the real app over a real gateway on a loopback demo model server.
"""

from __future__ import annotations

import asyncio
import threading

import pytest

from agent.stops import Surface
from contract.events import MessageComplete, MessageDelta
from demo_model.replies import reply_for
from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.config import ConnectionInfo
from desk.messages import GatewayMessage, ShutdownFinished
from desk.widgets import AssistantReply
from desk.widgets.session_view import SessionView
from tests.desk.kit import (
    click_until,
    submit,
    submit_and_get_reply,
    turn_threads,
    user_message,
    wait_until,
)
from tui_gateway.gateway import Gateway

pytestmark = pytest.mark.anyio

LONG_PROMPT = "Tell me about stopping streams"


@pytest.fixture
def tokens_per_second() -> float:
    """Slow enough that the long reply (about 300 tokens, 40 s) is still streaming when a
    stop comes from a machine so loaded that its keys and clicks land seconds late."""
    return 8.0


def _record_closed(server: DemoModelServer) -> float | None:
    """When the server saw the client close (a deadline for a loaded machine, not a bound)."""
    record = server.records.wait_for_record(lambda r: r.peer_closed_at is not None, timeout=10.0)
    return None if record is None else record.peer_closed_at


async def _stop_mid_stream(
    app: DeskApp, pilot: object, press: str | None = "escape", click: str | None = None
) -> AssistantReply:
    reply = await submit_and_get_reply(app, pilot, LONG_PROMPT)  # type: ignore[arg-type]
    await wait_until(pilot, lambda: len(reply.text) > 20, what="streamed text")  # type: ignore[arg-type]
    if click is not None:  # again if a loaded machine let the click land before the button woke
        button = app.query_one(click)
        await wait_until(pilot, lambda: not button.disabled, what="the button to wake")  # type: ignore[arg-type]
        await click_until(pilot, button, lambda: reply.outcome is not None, what="the stop")  # type: ignore[arg-type]
    elif press is not None:
        await pilot.press(press)  # type: ignore[attr-defined]
    await wait_until(pilot, lambda: reply.outcome is not None, what="the turn's outcome")  # type: ignore[arg-type]
    return reply


async def test_esc_stops_the_stream_keeps_the_partial_and_the_next_prompt_runs(
    desk_app: DeskApp, gateway: Gateway, demo_server: DemoModelServer
) -> None:
    async with desk_app.run_test(size=(120, 40)) as pilot:
        reply = await _stop_mid_stream(desk_app, pilot, press="escape")

        assert reply.outcome == "interrupted"
        assert reply.note.startswith("■ stopped by you · connection closed in ")
        expected = reply_for(user_message(LONG_PROMPT))
        assert reply.text and expected.startswith(reply.text) and reply.text != expected
        assert _record_closed(demo_server) is not None
        turn = gateway.turn(desk_app.session_id, reply.turn_id)
        assert turn.result is not None
        assert turn.result.exit_reason == "interrupted_by_user"
        assert turn.result.stop is not None and turn.result.stop.surface is Surface.DESK_KEY
        assert desk_app.status_bar.state == "idle"
        assert desk_app.query_one("#stop").disabled

        second = await submit_and_get_reply(desk_app, pilot, "reply with exactly: All *done*.")
        await wait_until(pilot, lambda: second.outcome is not None, what="the second reply")
        assert second.outcome == "completed"
        assert second.text == "All *done*."
        assert second.note == ""


async def test_stop_button_stops_the_turn_as_desk_button(
    desk_app: DeskApp, gateway: Gateway, demo_server: DemoModelServer
) -> None:
    async with desk_app.run_test(size=(120, 40)) as pilot:
        reply = await _stop_mid_stream(desk_app, pilot, click="#stop")

        assert reply.outcome == "interrupted"
        assert "stopped by you" in reply.note
        assert _record_closed(demo_server) is not None
        turn = gateway.turn(desk_app.session_id, reply.turn_id)
        assert turn.result is not None and turn.result.stop is not None
        assert turn.result.stop.surface is Surface.DESK_BUTTON
        assert desk_app.focused is desk_app.query_one("#prompt")


async def test_ctrl_c_while_running_stops_like_esc(desk_app: DeskApp, gateway: Gateway) -> None:
    async with desk_app.run_test(size=(120, 40)) as pilot:
        reply = await _stop_mid_stream(desk_app, pilot, press="ctrl+c")

        assert reply.outcome == "interrupted"
        turn = gateway.turn(desk_app.session_id, reply.turn_id)
        assert turn.result is not None and turn.result.exit_reason == "interrupted_by_user"
        assert desk_app.is_running


async def test_esc_with_nothing_running_does_nothing(desk_app: DeskApp, gateway: Gateway) -> None:
    async with desk_app.run_test(size=(120, 40)) as pilot:
        await pilot.press("escape")
        await pilot.press("escape")
        await pilot.pause()
        assert desk_app.is_running
        assert not desk_app.transcript.query(AssistantReply)
        assert desk_app.status_bar.state == "idle"

        reply = await submit_and_get_reply(desk_app, pilot, "reply with exactly: still here")
        await wait_until(pilot, lambda: reply.outcome is not None, what="the reply")
        assert reply.outcome == "completed" and reply.text == "still here"


async def test_server_fault_shows_one_error_line_and_the_desk_keeps_working(
    desk_app: DeskApp, demo_server: DemoModelServer
) -> None:
    demo_server.configure(fault="http:500")
    async with desk_app.run_test(size=(120, 40)) as pilot:
        failed = await submit_and_get_reply(desk_app, pilot, "hello")
        await wait_until(pilot, lambda: failed.outcome is not None, what="the failure")

        assert failed.outcome == "failed"
        assert failed.note.startswith("✖ ") and "500" in failed.note
        assert "\n" not in failed.note and "Traceback" not in failed.note
        notes = [r.note for r in desk_app.transcript.query(AssistantReply) if r.note]
        assert notes == [failed.note]

        demo_server.configure(fault=None)
        reply = await submit_and_get_reply(desk_app, pilot, "reply with exactly: recovered")
        await wait_until(pilot, lambda: reply.outcome is not None, what="the next reply")
        assert reply.outcome == "completed" and reply.text == "recovered"


async def test_prompt_typed_while_a_turn_runs_is_queued_then_runs(
    desk_app: DeskApp, gateway: Gateway
) -> None:
    async with desk_app.run_test(size=(120, 40)) as pilot:
        first = await submit_and_get_reply(desk_app, pilot, LONG_PROMPT)
        await wait_until(pilot, lambda: first.text, what="streaming")
        await submit(pilot, "reply with exactly: queued one")
        (queued,) = desk_app.view.queue.queued  # listed above the prompt box, not in the transcript
        assert queued.text == "reply with exactly: queued one"
        assert desk_app.status_bar.queued == 1
        assert "1 queued" in desk_app.status_bar.turn_text()

        await pilot.press("escape")
        await wait_until(
            pilot,
            lambda: (r := desk_app.transcript.reply(queued.key)) and r.outcome,
            what="the queued prompt to run",
        )
        second = desk_app.transcript.reply(queued.key)
        assert second is not None and second.text == "queued one"
        assert first.outcome == "interrupted"
        block = desk_app.transcript.prompt(queued.key)
        assert block is not None and block.status == "sent"
        assert desk_app.status_bar.queued == 0 and not desk_app.view.queue.entries


async def test_ctrl_q_while_streaming_is_a_system_stop_and_leaves_no_thread(
    desk_app: DeskApp, gateway: Gateway, demo_server: DemoModelServer
) -> None:
    async with desk_app.run_test(size=(120, 40)) as pilot:
        reply = await submit_and_get_reply(desk_app, pilot, LONG_PROMPT)
        await wait_until(pilot, lambda: reply.text, what="streaming")
        turn_id = reply.turn_id
        session_id = desk_app.session_id
        await pilot.press("ctrl+q")
        await wait_until(None, lambda: desk_app.return_code is not None, what="the app to exit")

    assert desk_app.return_code == 0
    assert reply.outcome == "interrupted"  # the stopped turn's end was drawn before the exit
    turn = gateway.turn(session_id, turn_id)
    assert turn.result is not None
    assert turn.result.exit_reason == "interrupted_by_system(gateway.shutdown)"
    assert desk_app.controllers.quit.report is not None
    assert desk_app.controllers.quit.report.turns_stopped == 1
    assert desk_app.controllers.quit.report.threads_left == []
    assert turn_threads() == []
    assert _record_closed(demo_server) is not None


async def test_ctrl_c_twice_with_nothing_running_quits(desk_app: DeskApp) -> None:
    async with desk_app.run_test(size=(120, 40)) as pilot:
        await pilot.press("ctrl+c")
        await pilot.press("ctrl+c")  # within 2 s (see test_keys.py for the clock-pinned cases)
        await wait_until(None, lambda: desk_app.return_code is not None, what="the app to exit")
    assert desk_app.return_code == 0


async def test_stop_from_the_input_thread_is_a_user_stop_and_consumes_the_key(
    desk_app: DeskApp, gateway: Gateway
) -> None:
    results: list[bool] = []

    def press_on_another_thread() -> None:
        results.append(desk_app.stop_from_input_thread("escape"))

    async with desk_app.run_test(size=(120, 40)) as pilot:
        assert desk_app.stop_from_input_thread("escape") is False  # nothing runs: key goes on
        reply = await submit_and_get_reply(desk_app, pilot, LONG_PROMPT)
        await wait_until(pilot, lambda: reply.text, what="streaming")
        thread = threading.Thread(target=press_on_another_thread, name="fake-input")
        thread.start()
        thread.join(5.0)
        await wait_until(pilot, lambda: reply.outcome is not None, what="the stop")

    assert results == [True]
    turn = gateway.turn(desk_app.session_id, reply.turn_id)
    assert turn.result is not None and turn.result.exit_reason == "interrupted_by_user"
    assert turn.result.stop is not None and turn.result.stop.surface is Surface.DESK_KEY


class _HeldView(SessionView):
    """A session view that holds a turn's completion until its desk says go."""

    async def on_gateway_message(self, message: GatewayMessage) -> None:
        app = self.app
        held = isinstance(message.payload, MessageComplete) and isinstance(app, _HeldDesk)
        if held:  # runs before the view's own handler
            await app.release.wait()


class _HeldDesk(DeskApp):
    """A desk whose view is still busy with a completion when the shutdown returns."""

    view_class = _HeldView

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.release = asyncio.Event()
        self.shutdown_seen = False

    def on_shutdown_finished(self, message: ShutdownFinished) -> None:
        self.shutdown_seen = True  # runs before the app's own handler, which then waits


async def test_a_quit_lets_the_view_draw_what_it_was_sent_before_exiting(
    gateway: Gateway, demo_server: DemoModelServer
) -> None:
    app = _HeldDesk(gateway, ConnectionInfo("demo", demo_server.base_url), handle_signals=False)
    async with app.run_test(size=(120, 40)) as pilot:
        reply = await submit_and_get_reply(app, pilot, LONG_PROMPT)
        await wait_until(pilot, lambda: reply.text, what="streaming")
        # From here on the view is held, and Pilot (which waits for every widget) is not used.
        app.action_quit()
        try:
            await wait_until(None, lambda: app.shutdown_seen, what="the shutdown's end")
            for _ in range(20):  # the app's handler would have exited by now, had it not waited
                await asyncio.sleep(0)
            assert app.return_code is None and reply.outcome is None
        finally:
            app.release.set()
        await wait_until(None, lambda: app.return_code is not None, what="the app to exit")
    assert app.return_code == 0
    assert reply.outcome == "interrupted"  # drawn before the exit, not dropped


class _CrashingView(SessionView):
    """A session view whose delta handler fails."""

    async def on_gateway_message(self, message: GatewayMessage) -> None:
        if isinstance(message.payload, MessageDelta):
            raise RuntimeError("boom in a handler")


class _CrashingDesk(DeskApp):
    """A desk whose delta handler fails, to check the backstop in ``on_unmount``."""

    view_class = _CrashingView


async def test_a_crash_still_ends_every_turn_as_a_system_stop(
    gateway: Gateway, demo_server: DemoModelServer
) -> None:
    info = ConnectionInfo("demo", demo_server.base_url, is_demo=True)
    app = _CrashingDesk(gateway, info, handle_signals=False)
    turn_ids: list[str] = []
    with pytest.raises(RuntimeError, match="boom in a handler"):
        async with app.run_test(size=(120, 40)) as pilot:
            await submit(pilot, LONG_PROMPT)
            assert app.running_turn is not None
            turn_ids.append(app.running_turn)
            await wait_until(pilot, lambda: not app.is_running, what="the crash")

    assert app.return_code == 1
    turn = gateway.turn(app.session_id, turn_ids[0])
    assert turn.result is not None
    assert turn.result.exit_reason == "interrupted_by_system(gateway.shutdown)"
    assert turn_threads() == []
