"""A tool call the person stopped reads the same after ``desk --resume`` as it did live: "■
stopped by you · 2 child processes ended", never the model's "stopped by the user". Over a real
gateway, the demo model and a SQLite store; the shell runs for real in ``tmp_path``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.provider.client import ProviderConfig
from agent.stops import StopRequest, Surface
from agent.store import SqliteStore
from agent.tools.base import stopped_result
from agent.tools.stop_text import read_stopped_head
from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.startup import Startup
from desk.tool_text import saved_result_line
from desk.widgets.saved_tool_calls import SavedToolCalls
from desk.widgets.tool_card import ToolCard
from tests.desk.kit import connection, submit, wait_until
from tui_gateway.gateway import Gateway, GatewayConfig

pytestmark = pytest.mark.anyio


def gateway_on(db: Path, demo_server: DemoModelServer, cwd: Path) -> Gateway:
    provider = ProviderConfig(base_url=demo_server.base_url, model="demo")
    config = GatewayConfig(provider=provider, cwd=cwd, approvals=False)
    return Gateway(config, store=SqliteStore(db))


async def test_a_call_stopped_live_reads_stopped_by_you_after_resume(
    demo_server: DemoModelServer, tmp_path: Path
) -> None:
    db = tmp_path / "desk.db"
    gateway = gateway_on(db, demo_server, tmp_path)
    app = DeskApp(gateway, connection(demo_server.base_url), handle_signals=False)
    command = "call tool shell with " + json.dumps({"command": "echo started; sleep 30"})
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await submit(pilot, command)
            await wait_until(pilot, lambda: app.controllers.tools.cards, what="the card")
            (card,) = app.controllers.tools.cards
            await wait_until(pilot, lambda: card.output == "started\n", what="its output")
            await pilot.press("escape")
            await wait_until(pilot, lambda: card.done, what="the stopped call")
            await wait_until(pilot, lambda: app.running_turn is None, what="the turn's end")
            live = card.state_text()
            session_id = app.session_id
    finally:
        assert gateway.shutdown(timeout_s=10.0).threads_left == []
    assert live.startswith("■ stopped by you · ") and " child process" in live

    gateway = gateway_on(db, demo_server, tmp_path)
    startup = Startup(resume=True, resume_id=session_id)
    app = DeskApp(gateway, connection(demo_server.base_url), handle_signals=False, startup=startup)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_until(
                pilot, lambda: app.transcript.query(SavedToolCalls), what="the resumed call"
            )
            resumed = str(app.transcript.query(SavedToolCalls).first().render())
            assert not app.transcript.query(ToolCard)  # a saved call, not a live card
    finally:
        assert gateway.shutdown(timeout_s=10.0).threads_left == []
    took = live.rsplit(" · ", 1)[0]  # the live line, less the call's time
    assert resumed == f"⚙ shell → {took}"
    assert "stopped by the user" not in resumed


def test_saved_lines_of_stopped_and_finished_calls() -> None:
    assert saved_result_line("stopped by the user") == "■ stopped by you"
    assert saved_result_line("not run: stopped by the user") == "■ stopped by you"
    assert saved_result_line("stopped by the user (3 child processes ended)") == (
        "■ stopped by you · 3 child processes ended"
    )
    assert saved_result_line("stopped by the system: quitting (1 child process ended)") == (
        "■ stopped by the system: quitting · 1 child process ended"
    )
    assert saved_result_line("exit 0: hello") == "exit 0: hello"
    assert saved_result_line("stopped by the user, said the log") == (
        "stopped by the user, said the log"  # a line a tool printed, not a stop's
    )


@settings(deadline=None)
@given(
    user=st.booleans(),
    reason=st.text(st.characters(blacklist_categories=["Cs", "Cc"]), max_size=40).filter(
        lambda text: len(f"x{text}x".splitlines()) == 1  # a one-line reason, as stops give
    ),
    started=st.booleans(),
    children=st.integers(min_value=0, max_value=5000),
)
def test_a_stopped_results_first_line_reads_back_as_it_was_written(
    user: bool, reason: str, started: bool, children: int
) -> None:
    stop = (
        StopRequest.by_user(Surface.DESK_KEY)
        if user
        else StopRequest.by_system(Surface.GATEWAY_SHUTDOWN, reason)
    )
    result = stopped_result(stop, "partial\noutput", started=started, children_ended=children)
    head = read_stopped_head(result.content.splitlines()[0])
    assert head is not None
    assert head.stopped_by == stop.describe()
    assert (head.started, head.children_ended) == (started, children)
