"""Buttons take every click: a press and a release in the same place are a click however quick,
even when the screen moved between the two, and a second quick click is not swallowed by the
first one's "active" effect. The mouse events go through the app as the terminal driver posts
them (Pilot's own click bypasses the app's click making)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from textual import events
from textual.app import App, ComposeResult

from agent.provider.client import ProviderConfig
from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.widgets import PromptInput
from desk.widgets.click_button import ClickButton
from tests.desk.kit import connection, wait_until
from tests.desk.test_compression_desk import Setup, notes, start_compress_mid_summary
from tests.desk.test_console_panel import output, type_in_console
from tui_gateway.gateway import Gateway, GatewayConfig

pytestmark = pytest.mark.anyio


def mouse(kind: type[events.MouseDown] | type[events.MouseUp], x: int, y: int) -> events.Event:
    return kind(
        widget=None,
        x=x,
        y=y,
        delta_x=0,
        delta_y=0,
        button=1,
        shift=False,
        meta=False,
        ctrl=False,
        screen_x=x,
        screen_y=y,
    )


async def press_while_the_screen_moves(app: App[object], pilot: object, button_id: str) -> None:
    """Press on the button, grow the prompt box by two lines (everything above it moves up),
    then release in the same place."""
    button = app.query_one(button_id)
    x, y = button.region.x + 1, button.region.y
    app.post_message(mouse(events.MouseDown, x, y))
    await pilot.pause()  # type: ignore[attr-defined]
    app.query_one(PromptInput).text = "one\ntwo\nthree"
    await wait_until(pilot, lambda: button.region.y != y, what="the layout to move")  # type: ignore[arg-type]
    app.post_message(mouse(events.MouseUp, x, y))


@pytest.fixture
def tokens_per_second() -> float:
    return 400.0


async def test_the_compression_cancel_takes_a_press_and_release_the_screen_moved_under(
    demo_server: DemoModelServer, tmp_path: Path
) -> None:
    setup = Setup(demo_server, tmp_path / "desk.db")
    demo_server.configure(fault="stall", fault_after_tokens=5, fault_times=1)
    app = setup.app()
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await start_compress_mid_summary(app, pilot, demo_server)
            await press_while_the_screen_moves(app, pilot, "#compression-cancel")
            await wait_until(pilot, lambda: notes(app), what="the cancel's outcome line")
            assert "cancelled by you" in notes(app)[0]
    finally:
        assert setup.gateway.shutdown(timeout_s=10).threads_left == []
        setup.store.close()


@pytest.fixture
def console_app(demo_server: DemoModelServer, tmp_path: Path) -> Iterator[DeskApp]:
    (tmp_path / "notes.md").write_text("# Notes\n\nStops must really stop.\n" * 20)
    provider = ProviderConfig(base_url=demo_server.base_url, model="demo")
    gateway = Gateway(GatewayConfig(provider=provider, cwd=tmp_path))
    try:
        yield DeskApp(gateway, connection(demo_server.base_url), handle_signals=False)
    finally:
        assert gateway.shutdown(timeout_s=5.0).threads_left == []


@pytest.mark.parametrize("tokens_per_second", [20.0])
async def test_the_console_cancel_takes_a_press_and_release_the_screen_moved_under(
    console_app: DeskApp,
) -> None:
    app = console_app
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("f2")
        panel = app.widgets.console_panel
        await wait_until(pilot, lambda: panel.input.has_focus, what="the console's focus")
        await type_in_console(pilot, "digest notes.md")
        await wait_until(pilot, lambda: "## notes.md" in output(panel), what="the digest")
        await press_while_the_screen_moves(app, pilot, "#console-cancel")
        await wait_until(pilot, lambda: "■ cancelled" in output(panel), what="the cancel")


class TwoButtons(App[None]):
    def __init__(self) -> None:
        super().__init__()
        self.pressed: list[str] = []

    def compose(self) -> ComposeResult:
        yield ClickButton("Cancel", id="cancel")

    def on_button_pressed(self, event: ClickButton.Pressed) -> None:
        self.pressed.append(event.button.id or "")


async def test_a_second_quick_click_is_a_press_too_and_no_click_takes_the_focus() -> None:
    app = TwoButtons()
    async with app.run_test(size=(40, 5)) as pilot:
        focused = app.focused
        await pilot.click("#cancel")
        await pilot.click("#cancel", offset=(2, 0))  # within the first one's active effect
        await pilot.pause()
        assert app.pressed == ["cancel", "cancel"]
        assert app.focused is focused
