"""Compression in the desk: ``/compress``, the panel, its "Cancel compression" and Esc, a prompt
that goes on when its compression is cancelled, prompts queued meanwhile, and a snapshot of the
panel mid-summary."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Button

from agent.provider.client import ProviderConfig
from agent.stops import Surface
from agent.store import SqliteStore
from contract.events import CompressionComplete, CompressionProgressed, ContextWindowKnown
from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.slash import completions
from desk.startup import Startup
from desk.widgets import PromptInput
from desk.widgets.approval_prompt import ApprovalPrompt
from desk.widgets.compression_panel import CompressionPanel
from desk.widgets.tool_card import ToolCard
from tests.compression.kit import WINDOW, long_transcript, snapshot
from tests.desk.kit import (
    click_until,
    connection,
    submit,
    submit_and_get_reply,
    wait_until,
)
from tests.support import EventLog, running_demo
from tui_gateway.gateway import Gateway, GatewayConfig

pytestmark = pytest.mark.anyio


@pytest.fixture
def tokens_per_second() -> float:
    return 400.0


class Setup:
    """A store holding a long transcript, and a gateway over it (automatic trigger off: the
    transcript fits the window, so only ``/compress`` compresses)."""

    def __init__(
        self,
        server: DemoModelServer,
        db: Path,
        window: int = 3 * WINDOW,
        *,
        threshold: float = 100.0,
        exchanges: int = 8,
        tools: bool = True,
    ) -> None:
        self.store = SqliteStore(db)
        provider = ProviderConfig(base_url=server.base_url, model="demo")
        config = GatewayConfig(
            provider=provider,
            cwd=db.parent,
            context_window=window,
            compress_threshold=threshold,
            tools=tools,
        )
        self.gateway = Gateway(config, store=self.store)
        self.log = EventLog()
        self.gateway.subscribe(self.log)
        self.session = self.store.sessions.create_session(
            title="long", model="demo", messages=long_transcript(exchanges)
        ).id

    def app(self, **kwargs: object) -> DeskApp:
        startup = Startup(resume=True, resume_id=self.session)
        app = DeskApp(
            self.gateway,
            connection(),
            handle_signals=False,
            startup=startup,
            **kwargs,  # type: ignore[arg-type]
        )
        app.controllers.compression.linger_s = 0.0
        return app

    def phases(self) -> list[str]:
        return [p.phase for p in self.log.of_type(CompressionProgressed)]


@pytest.fixture
def setup(demo_server: DemoModelServer, tmp_path: Path) -> Iterator[Setup]:
    s = Setup(demo_server, tmp_path / "desk.db")
    yield s
    assert s.gateway.shutdown(timeout_s=10).threads_left == []
    s.store.close()


def notes(app: DeskApp) -> list[str]:
    return [str(n.render()) for n in app.transcript.query(".compression-note")]


async def start_compress_mid_summary(
    app: DeskApp, pilot: Pilot[object], server: DemoModelServer
) -> CompressionPanel:
    server.configure(tokens_per_second=60.0)
    await submit(pilot, "/compress")
    panel = app.widgets.compression_panel
    await wait_until(
        pilot,
        lambda: panel.phase == "summarize" and panel.tokens_out >= 3,
        what="the summary streaming",
    )
    assert app.status_bar.state == "compressing"
    assert app.running_turn is not None
    return panel


def test_compress_is_a_known_slash_command() -> None:
    assert [c.name for c in completions("/comp")] == ["compress"]


async def test_compress_shows_the_panel_and_ends_compressed(setup: Setup) -> None:
    app = setup.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: setup.log.of_type(ContextWindowKnown), what="a count")
        before = setup.log.of_type(ContextWindowKnown)[0].used_tokens
        panel = app.widgets.compression_panel
        shown: list[tuple[str, bool]] = []
        show_progress = panel.show_progress

        def spy(progress: CompressionProgressed) -> None:
            show_progress(progress)
            shown.append((panel.phase, bool(panel.display)))

        panel.show_progress = spy  # type: ignore[method-assign]
        await submit(pilot, "/compress keep the findings")
        assert app.query_one(PromptInput).text == ""
        await wait_until(pilot, lambda: notes(app), what="the outcome line")
        assert shown and all(display for _phase, display in shown)
        assert "summarize" in [phase for phase, _display in shown]
        assert not panel.display  # collapsed into the transcript line
        phases = setup.phases()
        assert phases[0] == "lease" and phases[-1] == "done" and "summarize" in phases
        done = setup.log.of_type(CompressionComplete)[-1]
        assert done.status == "committed"
        line = notes(app)[-1]
        assert line.startswith("⇊ compressed ") and "→" in line and line.endswith(" tokens")
        assert f"{done.before_tokens:,} → {done.after_tokens:,}" in line
        assert app.running_turn is None and app.status_bar.state == "idle"
        # The gauge shows what the next request carries now, as the gateway counts it (its
        # count after the compression may come a moment after the line, on a busy machine;
        # compared with its count before, not a fixed figure: when the server's own count
        # was late, both are the calibrated estimate's, higher than the server's).
        await wait_until(
            pilot,
            lambda: setup.log.of_type(ContextWindowKnown)[-1].used_tokens < before,
            what=f"the count after the compression to fall under {before}",
        )
        await pilot.pause()
        window = setup.log.of_type(ContextWindowKnown)[-1]
        assert app.status_bar.context_used == window.used_tokens < before


async def test_the_panel_and_the_status_bar_count_from_the_turn_s_start(
    demo_server: DemoModelServer, tmp_path: Path
) -> None:
    setup = Setup(demo_server, tmp_path / "desk.db", window=WINDOW)  # the prompt must compress
    now = [100.0]
    app = setup.app(clock=lambda: now[0])
    # The summary stalls after a few tokens: its phase stays on the panel however slowly a
    # loaded machine lets the test look (the quit at the end stops it).
    demo_server.configure(fault="stall", fault_after_tokens=5, fault_times=1)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_until(pilot, lambda: bool(app.transcript.children), what="the session")
            await submit(pilot, "reply with exactly: made room")
            now[0] = 105.0  # the compression's first event comes later than the turn's start
            panel = app.widgets.compression_panel
            await wait_until(pilot, lambda: panel.phase == "summarize", what="the summary")
            assert app.status_bar.started_at == 100.0
            assert panel.started_at == app.status_bar.started_at
    finally:
        assert setup.gateway.shutdown(timeout_s=10).threads_left == []
        setup.store.close()


async def test_panel_shows_the_outcome_before_it_collapses(setup: Setup) -> None:
    app = setup.app()
    async with app.run_test(size=(120, 40)) as pilot:
        app.controllers.compression.linger_s = 60.0
        await submit(pilot, "/compress")
        panel = app.widgets.compression_panel
        await wait_until(pilot, lambda: panel.outcome is not None, what="the outcome")
        assert panel.display
        assert str(panel.query_one(".phase").render()).startswith("compressed ")
        assert not notes(app)
        await app.controllers.compression.collapse()
        assert not panel.display and len(notes(app)) == 1


@pytest.mark.parametrize("how", ["button", "escape", "escape-on-panel"])
async def test_cancel_mid_summary_rolls_back_and_the_next_turn_works(
    how: str, setup: Setup, demo_server: DemoModelServer
) -> None:
    before = snapshot(setup.store, setup.session)
    app = setup.app()
    # The summary stalls after a few tokens, so the cancel always lands before it could end,
    # however slowly a loaded machine delivers the click.
    demo_server.configure(fault="stall", fault_after_tokens=5, fault_times=1)
    async with app.run_test(size=(120, 40)) as pilot:
        await start_compress_mid_summary(app, pilot, demo_server)
        if how == "button":
            cancel = app.query_one("#compression-cancel")
            await click_until(pilot, cancel, lambda: notes(app), what="the outcome line")
        elif how == "escape-on-panel":
            app.widgets.compression_panel.focus()
            await pilot.press("escape")
        else:
            assert app.query_one(PromptInput).has_focus
            await pilot.press("escape")
        await wait_until(pilot, lambda: notes(app), what="the outcome line")
        (note,) = notes(app)  # the cancel's own figures: the summary's connection, the rollback
        assert note.startswith("⇊ compression cancelled by you · summary connection closed in ")
        assert " · rolled back in " in note and "worker" not in note
        done = setup.log.of_type(CompressionComplete)[-1]
        assert done.status == "cancelled" and done.stop is not None
        expected = Surface.DESK_BUTTON if how == "button" else Surface.DESK_KEY
        assert done.stop.surface == expected.value
        assert app.running_turn is None
        assert snapshot(setup.store, setup.session) == before
        demo_server.configure(tokens_per_second=400.0)
        reply = await submit_and_get_reply(app, pilot, "reply with exactly: carried on")
        await wait_until(pilot, lambda: reply.outcome is not None, what="the next reply")
        assert reply.outcome == "completed" and reply.text == "carried on"


async def test_cancel_compression_before_a_prompt_sends_the_prompt_without_it(
    demo_server: DemoModelServer, tmp_path: Path
) -> None:
    # 5 exchanges fill about 75 % of a 5,000-token window by the first estimate (3 characters a
    # token) and 60 % once the server's count calibrated it, which may come first: due at 30 %
    # either way, and they fit; the first exchange and the last three are kept whole (the tail
    # keeps at least 6 messages), so one is summarised whichever count comes first (with 3
    # exchanges there was nothing between them once the count came first)
    setup = Setup(demo_server, tmp_path / "desk.db", 5000, threshold=0.3, exchanges=5, tools=False)
    app = setup.app()
    states: list[str] = []
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            # the summary stalls after a few tokens: the click always lands before it could end
            demo_server.configure(fault="stall", fault_after_tokens=5, fault_times=1)
            reply = await submit_and_get_reply(app, pilot, "reply with exactly: went anyway")
            panel = app.widgets.compression_panel
            await wait_until(
                pilot, lambda: panel.running and panel.tokens_out >= 3, what="the summary"
            )
            cancel = app.query_one("#compression-cancel", Button)
            assert str(cancel.label) == "Cancel compression"
            assert "the prompt is sent without it" in str(cancel.tooltip)

            def seen(state: str) -> None:
                states.append(state)

            app.watch(app.status_bar, "state", seen, init=False)
            await click_until(pilot, cancel, lambda: notes(app), what="the outcome line")
            await wait_until(pilot, lambda: reply.outcome is not None, what="the reply")
            assert (reply.outcome, reply.text) == ("completed", "went anyway")
            assert notes(app)[-1].startswith("⇊ compression cancelled by you")
            assert "stopping" not in states  # the turn was never stopping
            done = setup.log.of_type(CompressionComplete)[-1]
            assert done.stop is not None and done.stop.surface == Surface.DESK_BUTTON.value
    finally:
        assert setup.gateway.shutdown(timeout_s=10).threads_left == []
        setup.store.close()


async def test_esc_during_a_prompt_s_compression_exports_what_the_transcript_shows(
    demo_server: DemoModelServer, tmp_path: Path
) -> None:
    setup = Setup(demo_server, tmp_path / "desk.db", 5000, threshold=0.3, exchanges=5, tools=False)
    app = setup.app()
    target = tmp_path / "out.md"
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            demo_server.configure(fault="stall", fault_after_tokens=5, fault_times=1)
            reply = await submit_and_get_reply(app, pilot, "reply with exactly: never sent")
            panel = app.widgets.compression_panel
            await wait_until(
                pilot,
                lambda: panel.running and panel.tokens_out >= 3,
                what="the summary",
                explain=lambda: f"panel {panel.turn_id} {panel.tokens_out} {setup.log.events}",
            )
            await pilot.press("escape")
            await wait_until(pilot, lambda: reply.outcome is not None, what="the stop")
            await wait_until(pilot, lambda: notes(app), what="the outcome line")
            shown = [notes(app)[-1], reply.note]
            await submit(pilot, f"/export {target}")
            await wait_until(pilot, target.exists, what="the export")
        assert shown[0].startswith("⇊ compression cancelled by you")
        assert shown[1].startswith("■ stopped by you")
        exported = target.read_text()
        assert "> " + shown[0] in exported
        # in the transcript's order: the compression's line above the reply's receipt
        assert exported.index(shown[0]) < exported.index(shown[1])
    finally:
        assert setup.gateway.shutdown(timeout_s=10).threads_left == []
        setup.store.close()


async def test_a_prompt_typed_during_compression_is_queued_then_runs(
    setup: Setup, demo_server: DemoModelServer
) -> None:
    app = setup.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await start_compress_mid_summary(app, pilot, demo_server)
        await submit(pilot, "reply with exactly: after")
        (queued,) = app.view.queue.queued
        assert queued.text == "reply with exactly: after" and app.status_bar.queued == 1
        assert app.widgets.compression_panel.running  # a soft prompt never aborts a compression
        demo_server.configure(tokens_per_second=400.0)
        await wait_until(
            pilot, lambda: app.transcript.reply(queued.key), what="the queued prompt runs"
        )
        reply = app.transcript.reply(queued.key)
        await wait_until(pilot, lambda: reply is not None and reply.outcome is not None)
        assert reply is not None and reply.text == "after"
        assert setup.log.of_type(CompressionComplete)[-1].status == "committed"
        assert notes(app) and notes(app)[-1].startswith("⇊ compressed ")
        children = list(app.transcript.children)
        note = app.transcript.query(".compression-note").last()
        block = app.transcript.prompt(queued.key)
        assert children.index(note) < children.index(block)  # where the compression ran


async def test_a_compress_queued_behind_a_turn_runs_and_leaves_the_queue(
    setup: Setup, demo_server: DemoModelServer
) -> None:
    app = setup.app()
    async with app.run_test(size=(120, 40)) as pilot:
        demo_server.configure(tokens_per_second=40.0)
        first = await submit_and_get_reply(app, pilot, "Tell me about stopping streams")
        await submit(pilot, "/compress")
        await wait_until(pilot, lambda: app.widgets.queue.items, what="the queue's line")
        (line,) = app.widgets.queue.items
        assert line.entry.text == "/compress" and not line.entry.editable
        assert not line.query(".edit") and app.status_bar.queued == 1
        demo_server.configure(tokens_per_second=4000.0)
        await wait_until(pilot, lambda: first.outcome is not None, what="the first turn")
        await wait_until(pilot, lambda: notes(app), what="the compression's outcome line")
        await wait_until(pilot, lambda: app.status_bar.state == "idle", what="idle")
        assert not line.is_attached  # the compression stands for it now
        assert app.status_bar.queued == 0 and app.view.queue.entries == []
        await submit(pilot, "reply with exactly: next")
        reply = app.transcript.reply(app.transcript.reply_turn_ids[-1])
        assert reply is not None
        await wait_until(pilot, lambda: reply.outcome is not None, what="the next turn")
        assert reply.text == "next" and app.status_bar.queued == 0


# -- snapshot -------------------------------------------------------------------------------------

STALL_AFTER_TOKENS = 64


@pytest.fixture
def stalled_server() -> Iterator[DemoModelServer]:
    with running_demo(0, fault="stall", fault_after_tokens=STALL_AFTER_TOKENS) as server:
        yield server


def test_snapshot_panel_mid_summary(
    snap_compare: object, stalled_server: DemoModelServer, tmp_path: Path
) -> None:
    # the server's count calibrates the session: at its ratio the transcript is worth
    # compressing in the smaller window
    setup = Setup(stalled_server, tmp_path / "desk.db", window=WINDOW)
    app = setup.app(clock=lambda: 0.0)
    app.animation_level = "none"

    async def run_before(pilot: Pilot[object]) -> None:
        box = app.query_one(PromptInput)
        box.cursor_blink = False
        await wait_until(pilot, lambda: bool(app.status_bar.window_note), what="the window")
        counts = setup.log.of_type
        await wait_until(
            pilot,
            lambda: counts(ContextWindowKnown) and counts(ContextWindowKnown)[-1].measured,
            what="the server's count of the session",
        )
        await submit(pilot, "/compress")
        panel = app.widgets.compression_panel
        await wait_until(
            pilot,
            lambda: panel.phase == "summarize" and panel.tokens_out == STALL_AFTER_TOKENS,
            what="the summary held at a fixed count",
        )
        await pilot.pause()

    try:
        assert snap_compare(app, terminal_size=(120, 30), run_before=run_before)  # type: ignore[operator]
    finally:
        assert setup.gateway.shutdown(timeout_s=10).threads_left == []
        setup.store.close()


async def test_a_prompt_s_compression_line_stays_above_the_tool_calls_its_turn_made_after(
    demo_server: DemoModelServer, tmp_path: Path
) -> None:
    """The outcome lingers on the panel while the turn goes on; when it collapses into its line,
    the line goes where the compression ran (under the prompt), not under the tool card and
    the approval the turn reached meanwhile."""
    setup = Setup(demo_server, tmp_path / "desk.db", window=WINDOW)  # the prompt must compress
    app = setup.app()
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            app.controllers.compression.linger_s = 60.0  # collapsed below, by hand
            await wait_until(pilot, lambda: bool(app.transcript.children), what="the session")
            await submit(pilot, "call tool shell with " + json.dumps({"command": "echo hi"}))
            cards = app.transcript.query(ToolCard)
            await wait_until(pilot, lambda: bool(cards.results()), what="the tool card")
            await wait_until(
                pilot, lambda: bool(app.screen.query(ApprovalPrompt)), what="the approval"
            )
            assert setup.log.of_type(CompressionComplete)[-1].status == "committed"
            await app.controllers.compression.collapse()
            children = list(app.transcript.children)
            (line,) = app.transcript.query(".compression-note")
            (card,) = app.transcript.query(ToolCard)
            prompt = app.transcript.prompt(setup.log.of_type(CompressionComplete)[-1].turn_id)
            assert prompt is not None
            assert children.index(prompt) < children.index(line) < children.index(card)
            await pilot.press("escape")
            await wait_until(pilot, lambda: app.running_turn is None, what="the turn's end")
    finally:
        assert setup.gateway.shutdown(timeout_s=10).threads_left == []
        setup.store.close()
