"""A layout's map of the widgets is freed when the next layout replaces it, not by the garbage
collector (see :mod:`desk.lean_layout`)."""

from __future__ import annotations

import gc

import pytest
from textual.app import App, ComposeResult
from textual.map_geometry import MapGeometry
from textual.widgets import Static

from desk.lean_layout import lighten_layouts

pytestmark = pytest.mark.anyio


class Growing(App[None]):
    CSS = "Static { height: auto; }"

    def compose(self) -> ComposeResult:
        yield Static("", id="reply")
        yield Static("status", id="status")


async def test_a_reply_growing_line_by_line_leaves_no_layout_for_the_collector(
    saved_garbage: list[object],
) -> None:
    lighten_layouts()
    app = Growing()
    async with app.run_test(size=(60, 40)) as pilot:
        reply = app.query_one("#reply", Static)
        for lines in range(1, 25):  # each frame one line taller: a layout each time
            reply.update("\n".join(f"line {n}" for n in range(lines)))
            await pilot.pause()
        assert app.query_one("#status").region.y == 24  # laid out below the grown reply
        gc.collect()
        kept = [  # a layout's map held by the closure of the function that built it
            cell
            for cell in saved_garbage
            if type(cell).__name__ == "cell"
            and isinstance(contents := cell.cell_contents, dict)  # type: ignore[attr-defined]
            and any(isinstance(value, MapGeometry) for value in contents.values())
        ]
    assert kept == []
