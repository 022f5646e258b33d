"""A tiny terminal never crashes the desk: down to 1x1 the layout is squeezed, idle, with text
in the prompt box, and while a reply streams."""

from __future__ import annotations

import pytest

from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.widgets import PromptInput
from tests.desk.kit import submit_and_get_reply

WIDTHS = [14, 12, 10, 8, 5, 3, 2, 1]
"""The widths tried, from the last that drew the whole layout down to one column (each layer
of the layout gives way at one of them)."""
HEIGHTS = [1, 3, 20]
"""The heights tried (one row, a few, a usual one)."""

pytestmark = pytest.mark.anyio


@pytest.fixture
def tokens_per_second() -> float:
    """Slow enough that the reply still streams through every squeeze."""
    return 10.0


async def test_idle_and_typed_text_survive_every_narrow_width(desk_app: DeskApp) -> None:
    async with desk_app.run_test(size=(80, 24)) as pilot:
        box = desk_app.query_one(PromptInput)
        for height in HEIGHTS:
            for width in WIDTHS:
                await pilot.resize_terminal(width, height)
                box.text = "a few words typed into the prompt box"
                await pilot.pause()
                box.text = ""
                await pilot.pause()
        assert desk_app.is_running


async def test_a_streamed_reply_survives_a_squeeze(
    desk_app: DeskApp, demo_server: DemoModelServer
) -> None:
    demo_server.configure(max_tokens=4000, reply_shape="document")  # streams for minutes
    async with desk_app.run_test(size=(80, 24)) as pilot:
        await submit_and_get_reply(desk_app, pilot, "hello")
        box = desk_app.query_one(PromptInput)
        box.text = "typed while it streams"
        for width in WIDTHS:
            for height in HEIGHTS:
                await pilot.resize_terminal(width, height)
                await pilot.pause()
        assert box.busy, "the reply was still streaming while the window was squeezed"
        assert desk_app.is_running


@pytest.mark.parametrize(
    "keys",
    [("ctrl+p",), ("ctrl+p", *"theme"), ("ctrl+b",), ("f2",), ("f1",)],
    ids=["palette", "palette-filtered", "sidebar", "console", "help"],
)
async def test_the_panels_and_the_palette_survive_every_narrow_width(
    desk_app: DeskApp, keys: tuple[str, ...]
) -> None:
    async with desk_app.run_test(size=(80, 24)) as pilot:
        await pilot.press(*keys)
        await pilot.pause()
        for width in WIDTHS:
            for height in (1, 20):
                await pilot.resize_terminal(width, height)
                await pilot.pause()
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        assert desk_app.is_running, keys
        await pilot.press(*keys[:1])  # closes what it opened
        await pilot.pause()
