"""A child agent's card draws what it writes as Markdown, as the transcript draws a reply."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult

from desk.widgets.agent_card import AgentCard
from tests.desk.kit import drawn

pytestmark = pytest.mark.anyio


class _CardApp(App[None]):
    def compose(self) -> ComposeResult:
        yield AgentCard("k1", "t1", "map the north", background=False, clock=lambda: 0.0)


def output(card: AgentCard) -> str:
    """The card's output lines as the screen shows them."""
    return drawn(card.query_children(".output").first())


async def test_the_card_draws_headings_emphasis_and_code_not_their_marks() -> None:
    # The card showed '## About: map the north' and '**demo model**' as written
    app = _CardApp()
    async with app.run_test(size=(80, 20)) as pilot:
        card = app.query_one(AgentCard)
        card.add_text("## About the north\n\nIt comes from the **demo model**.\n\n```python\nx = 1")
        await pilot.pause()
        shown = output(card)
        assert "About the north" in shown and "demo model" in shown and "x = 1" in shown
        assert "##" not in shown and "**" not in shown and "```" not in shown
        card.add_text("\x1b[2J")  # a control sequence stays text, never a terminal command
        await pilot.pause()
        assert "\x1b" not in output(card)
