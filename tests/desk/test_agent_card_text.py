"""A child agent's card draws what it writes as Markdown, as the transcript draws a reply."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult

from desk.markdown_cuts import markdown_tail
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


def test_a_tail_cut_inside_a_table_or_a_code_block_draws_as_in_the_whole() -> None:
    # The last six lines of a reply that ends in a table lost its header: the rows drew as one
    # paragraph of pipes; cut inside a code block, its closing fence opened another
    table = "intro\n\n| step | what |\n|---|---|\n" + "".join(
        f"| {n} | row {n} |\n" for n in range(8)
    )
    tail = markdown_tail(table, 6)
    assert tail.startswith("| step | what |\n|---|---|\n| 2 | row 2 |")
    code = "text\n\n```python\n" + "".join(f"x{n} = {n}\n" for n in range(9)) + "```\n\nafter"
    assert markdown_tail(code, 6) == "```python\nx6 = 6\nx7 = 7\nx8 = 8\n```\n\nafter"
    assert markdown_tail("one\ntwo", 6) == "one\ntwo"
    assert markdown_tail("", 6) == ""


async def test_a_finished_child_ending_in_a_table_draws_the_table() -> None:
    app = _CardApp()
    async with app.run_test(size=(80, 20)) as pilot:
        card = app.query_one(AgentCard)
        rows = "".join(f"| {n} | step {n} |\n" for n in range(1, 6))
        card.add_text(f"Here is how it goes.\n\n| n | what happens |\n|---|---|\n{rows}")
        await pilot.pause()
        shown = output(card)
        assert "what happens" in shown and "step 5" in shown
        assert "|---" not in shown and "| 5 |" not in shown  # a table, not its source
