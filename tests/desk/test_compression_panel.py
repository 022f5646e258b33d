"""The compression panel shows what the gateway says, within what it can honestly claim."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult
from textual.widgets import Static

from contract.events import CompressionProgressed
from desk.widgets.compression_panel import CompressionPanel

pytestmark = pytest.mark.anyio


class _PanelApp(App[None]):
    def compose(self) -> ComposeResult:
        yield CompressionPanel(clock=lambda: 100.0)


async def test_the_summary_count_never_passes_its_budget() -> None:
    app = _PanelApp()
    async with app.run_test() as pilot:
        panel = app.query_one(CompressionPanel)
        panel.begin("t1", started_at=100.0)
        for tokens_out in (300, 512, 700):  # the stream's count is an estimate
            panel.show_progress(
                CompressionProgressed(
                    turn_id="t1", phase="summarize", tokens_out=tokens_out, budget=512
                )
            )
            await pilot.pause()
            counts = str(panel.query_one(".counts", Static).render())
            assert f"{min(tokens_out, 512):,}/512 tokens" in counts
        assert "700/512" not in counts
