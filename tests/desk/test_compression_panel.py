"""The compression panel shows what the gateway says, within what it can honestly claim."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult
from textual.widgets import ProgressBar, Static

from contract.events import CompressionComplete, CompressionProgressed
from desk.widgets.compression_panel import CompressionPanel
from tests.desk.kit import wait_until

pytestmark = pytest.mark.anyio


class _PanelApp(App[None]):
    def compose(self) -> ComposeResult:
        yield CompressionPanel(clock=lambda: 100.0)


def summarising(tokens_out: int, budget: int = 512) -> CompressionProgressed:
    return CompressionProgressed(
        turn_id="t1", phase="summarize", tokens_out=tokens_out, budget=budget
    )


def shown(panel: CompressionPanel) -> tuple[str, str, float | None]:
    """The phase text, the counts and the bar's fill (None: indeterminate)."""
    phase = str(panel.query_one(".phase", Static).render())
    counts = str(panel.query_one(".counts", Static).render())
    return phase, counts, panel.query_one(ProgressBar).percentage


async def test_the_bar_is_full_only_when_the_compression_is_done() -> None:
    app = _PanelApp()
    async with app.run_test() as pilot:
        panel = app.query_one(CompressionPanel)
        panel.begin("t1", started_at=100.0)
        await pilot.pause()
        assert shown(panel)[2] is None  # the lease and the reading: no count to show yet
        for tokens_out in (300, 500, 511):
            panel.show_progress(summarising(tokens_out))
            await pilot.pause()
            phase, counts, fill = shown(panel)
            assert "summarising" in phase and f"{tokens_out:,}/512 tokens" in counts
            assert fill is not None and 0 < fill < 1  # still streaming: never full
        panel.show_progress(CompressionProgressed(turn_id="t1", phase="commit", budget=512))
        await pilot.pause()
        fill = shown(panel)[2]
        assert fill is not None and fill < 1
        panel.show_progress(CompressionProgressed(turn_id="t1", phase="done", budget=512))
        await pilot.pause()
        assert shown(panel)[2] == 1


async def test_a_count_past_the_budget_is_no_measure_and_never_reads_full() -> None:
    app = _PanelApp()
    async with app.run_test() as pilot:
        panel = app.query_one(CompressionPanel)
        panel.begin("t1", started_at=100.0)
        for tokens_out in (512, 700):  # the stream's count is an estimate: it passes the budget
            panel.show_progress(summarising(tokens_out))
            await pilot.pause()
            phase, counts, fill = shown(panel)
            assert "writing summary" in phase and f"~{tokens_out:,} tokens ·" in counts
            assert "/512" not in counts and fill is None  # indeterminate, not 512/512


class _PastBudgetApp(_PanelApp):
    """The panel while a summary streams past its budget's count. Its indeterminate bar is drawn
    as it animates, at the pinned clock's first frame (the moving segment just off its left
    end): with no animation at all Textual draws that bar whole, which would read as full."""

    def on_mount(self) -> None:
        self.animation_level = "basic"
        panel = self.query_one(CompressionPanel)
        panel.begin("t1", started_at=100.0)
        panel.show_progress(CompressionProgressed(turn_id="t1", phase="summarize", tokens_in=4_322))
        panel.show_progress(summarising(700))


def test_snapshot_a_summary_past_its_budget(snap_compare: object) -> None:
    assert snap_compare(_PastBudgetApp(), terminal_size=(120, 3))  # type: ignore[operator]


class _BigCountsApp(_PanelApp):
    """A long transcript's summary streaming, 65 s in (the clock is pinned at 100 s)."""

    def on_mount(self) -> None:
        panel = self.query_one(CompressionPanel)
        panel.begin("t1", started_at=35.0)
        panel.show_progress(
            CompressionProgressed(turn_id="t1", phase="summarize", tokens_in=24_406)
        )
        panel.show_progress(summarising(1_024, budget=2_048))


def screen_row(app: App[None], y: int) -> str:
    """Row ``y`` of the screen as the compositor renders it for the terminal."""
    strip = app.screen._compositor.render_strips()[y]
    return "".join(segment.text for segment in strip)


@pytest.mark.parametrize(
    ("columns", "counts"),
    [
        (120, "1,024/2,048 tokens · 24,406 tokens to summarise · 1 m 05 s"),
        (80, "1,024/2,048 · 24,406 to summarise"),  # shorter words, the elapsed time left out
    ],
)
async def test_the_counts_are_shown_whole(columns: int, counts: str) -> None:
    app = _BigCountsApp()
    async with app.run_test(size=(columns, 3)) as pilot:
        await pilot.pause()
        panel = app.query_one(CompressionPanel)
        row = screen_row(app, panel.region.y)
        assert f" {counts} " in row
        assert row.rstrip().endswith("Cancel compression")
        assert "⇊" in row and "summarising" in row


def test_snapshot_big_counts_at_80_columns(snap_compare: object) -> None:
    assert snap_compare(_BigCountsApp(), terminal_size=(80, 3))  # type: ignore[operator]


def test_snapshot_big_counts_at_120_columns(snap_compare: object) -> None:
    assert snap_compare(_BigCountsApp(), terminal_size=(120, 3))  # type: ignore[operator]


class _MovingClockApp(App[None]):
    def __init__(self) -> None:
        super().__init__()
        self.now = 100.0

    def compose(self) -> ComposeResult:
        yield CompressionPanel(clock=lambda: self.now)


async def test_the_elapsed_time_goes_on_between_events_and_stops_at_the_outcome() -> None:
    # Between two events (the server counting the summary request first: seconds against a
    # busy llama-server) the panel read '0.1 s' while the status bar counted on
    app = _MovingClockApp()
    async with app.run_test() as pilot:
        panel = app.query_one(CompressionPanel)
        panel.begin("t1", started_at=100.0)
        panel.show_progress(summarising(0))
        await pilot.pause()
        assert shown(panel)[1].endswith("0.0 s")
        app.now = 104.2  # no event meanwhile
        await wait_until(pilot, lambda: shown(panel)[1].endswith("4.2 s"), what="the time")
        assert "0/512 tokens" in shown(panel)[1]  # the counts as the last event said
        panel.show_outcome(
            CompressionComplete(
                turn_id="t1", status="committed", message="ok", before_tokens=10, after_tokens=5
            )
        )
        app.now = 109.0
        await pilot.pause(0.3)  # three ticks of the time: it stays
        assert "4.2 s" in shown(panel)[1]
