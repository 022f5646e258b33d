"""The status bar on a narrow terminal: its two sides never overlap; lower-priority items (the
window's source, the session's tokens, the server, the retry detail...) give way first, and
the turn's state and the context gauge stay. A snapshot at 60 columns."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.cells import cell_len
from textual.app import App, ComposeResult
from textual.pilot import Pilot
from textual.widgets import Static

from agent.usage import TokenUsage
from desk.app import DeskApp
from desk.config import ConnectionInfo
from desk.status_fit import GAP, Part, fit
from desk.widgets.painted_label import PaintedLabel
from desk.widgets.status_bar import StatusBar
from tests.desk.kit import submit_and_get_reply, wait_until
from tests.desk.test_snapshots_look import _desk, _settle
from tui_gateway.gateway import Gateway

MODEL = "qwen2.5-coder-32b-instruct-q4"


class OneBar(App[None]):
    def compose(self) -> ComposeResult:
        connection = ConnectionInfo(MODEL, "http://gpu-box:8080/v1", source="--base-url")
        yield StatusBar(connection, clock=lambda: 100.0)


def loaded(bar: StatusBar) -> None:
    """Every item the bar can show at once, as a busy session has them."""
    bar.state, bar.started_at, bar.detail, bar.queued = "streaming", 88.0, "retry in 2 s", 2
    bar.context_window, bar.context_used = 8192, 4000
    bar.usage = TokenUsage(3, 12_345, 678, 0, 0)
    bar.window_note = "window 8,192 from the server"


def sides(bar: StatusBar) -> tuple[PaintedLabel, Static]:
    return bar.query_one(".turn", PaintedLabel), bar.query_one(".server", Static)


@pytest.mark.anyio
@pytest.mark.parametrize("width", [40, 60, 80, 120])
async def test_the_two_sides_never_overlap_and_the_state_and_gauge_stay(width: int) -> None:
    app = OneBar()
    async with app.run_test(size=(width, 3)) as pilot:
        bar = app.query_one(StatusBar)
        loaded(bar)
        await pilot.pause()
        left, right = sides(bar)
        shown_left, shown_right = str(left.render()), str(right.render())
        # each side's text fits its own region, the right one starts after the left one's
        assert cell_len(shown_left) <= left.region.width
        assert cell_len(shown_right) <= right.region.width
        assert left.region.right <= right.region.x
        assert shown_left.startswith("● streaming") and "ctx 49%" in shown_right
        assert cell_len(shown_left) + GAP + cell_len(shown_right) <= bar.content_size.width
        if width >= 120:
            assert "retry in 2 s" in shown_left and "2 queued" in shown_left
        if width <= 80:  # the lowest-priority items gave way first
            assert "window" not in shown_right and "Σ" not in shown_right


@pytest.mark.anyio
async def test_the_gauge_ticks_without_a_layout_and_a_wider_figure_is_shown_whole() -> None:
    app = OneBar()
    async with app.run_test(size=(120, 3)) as pilot:
        bar = app.query_one(StatusBar)
        bar.context_window, bar.context_used = 10_000, 1_200
        await pilot.pause()
        _, right = sides(bar)
        assert not right._layout_required  # noqa: SLF001 - a layout the next frame will do
        bar.context_used = 1_300  # 12% -> 13%: the same width, no layout of the screen
        assert not right._layout_required  # noqa: SLF001
        await pilot.pause()
        assert "ctx 13%" in str(right.render())
        bar.context_used = 200  # 2%: narrower, so the side is laid out again and fits
        await pilot.pause()
        assert "ctx 2%" in str(right.render())
        assert right.region.width == cell_len(str(right.render()))
        bar.context_used = 9_900  # 99%: wider
        await pilot.pause()
        shown = str(right.render())
        assert "ctx 99%" in shown and right.region.width == cell_len(shown)


parts = st.lists(
    st.builds(
        Part,
        st.text(alphabet="abc ·●Σ", max_size=30),
        st.lists(st.tuples(st.integers(1, 99), st.text(alphabet="ab", max_size=8)), max_size=2).map(
            lambda steps: tuple(sorted(steps, reverse=True))
        ),
    ),
    max_size=6,
)


@settings(deadline=None)
@given(left=parts, right=parts, width=st.integers(1, 200))
def test_fitted_sides_and_their_gap_are_never_wider_than_the_line(
    left: list[Part], right: list[Part], width: int
) -> None:
    shown_left, shown_right = fit(left, right, width)
    gap = GAP if shown_left and shown_right else 0
    assert cell_len(shown_left) + gap + cell_len(shown_right) <= width


def test_the_status_bar_at_60_columns(snap_compare: object, fast_gateway: Gateway) -> None:
    app: DeskApp = _desk(fast_gateway, source="--demo")

    async def run_before(pilot: Pilot[object]) -> None:
        await _settle(app, pilot)
        reply = await submit_and_get_reply(app, pilot, "reply with exactly: narrow")  # type: ignore[arg-type]
        await wait_until(pilot, lambda: reply.outcome is not None, what="the reply")
        await wait_until(pilot, lambda: app.status_bar.state == "idle", what="idle")
        app.status_bar.queued = 2  # as if two prompts waited: one more item on the left
        await pilot.pause()

    assert snap_compare(app, terminal_size=(60, 20), run_before=run_before)  # type: ignore[operator]
