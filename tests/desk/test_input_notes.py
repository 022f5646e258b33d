"""The notes the app takes of each key, as a quit on the input thread reads them: a send key
is counted on its way before it is counted seen, so that a quit that finds every key it posted
seen always finds an Enter among them still on its way (its prompt is sent or saved, never
lost)."""

from __future__ import annotations

import pytest

from desk.app import DeskApp

pytestmark = pytest.mark.anyio


async def test_an_enter_is_on_its_way_before_it_counts_as_seen(desk_app: DeskApp) -> None:
    async with desk_app.run_test(size=(120, 40)) as pilot:
        prompt = desk_app.widgets.prompt
        notes = desk_app._notes
        prompt.focus()
        await pilot.pause()
        seen_when_given: list[int] = []
        given = prompt.sends.given

        def recorded() -> None:
            seen_when_given.append(notes.keys_seen)
            given()

        prompt.sends.given = recorded  # type: ignore[method-assign]
        before = notes.keys_seen
        await pilot.press("h", "i", "enter")
        # 'h' and 'i' seen; the Enter on its way while not yet counted seen
        assert seen_when_given == [before + 2]
        assert notes.keys_seen == before + 3


async def test_each_key_counts_once_also_one_no_widget_takes(desk_app: DeskApp) -> None:
    # A key no widget takes bubbles back up to the app; counted again, the app looked ahead of
    # the keys still on their way, and a Ctrl+Q read with an Enter in flight went first.
    async with desk_app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        notes = desk_app._notes
        before = notes.keys_seen
        await pilot.press("a", "f5", "ctrl+l", "escape", "pageup")
        await pilot.pause()
        assert notes.keys_seen == before + 5


async def test_an_esc_read_while_the_app_opens_the_palette_is_the_palette_s(
    desk_app: DeskApp,
) -> None:
    # The input thread read Ctrl+P and Esc in one burst; the app saw the Ctrl+P but had not
    # opened the palette yet when the Esc was offered as a stop: the turn was stopped, the
    # palette left open (1 run in ~20 with the cores busy).
    async with desk_app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        notes = desk_app._notes
        desk_app.popup_key_from_input_thread(notes.keys_done)  # as the input thread reads it
        pending_while_opening: list[bool] = []
        open_palette = desk_app.action_command_palette

        def opening() -> None:
            pending_while_opening.append(notes.popup_key_pending())  # seen, not handled yet
            open_palette()

        desk_app.action_command_palette = opening  # type: ignore[method-assign]
        await pilot.press("ctrl+p")
        await pilot.pause()
        assert pending_while_opening == [True]
        assert not notes.popup_key_pending()  # the palette is open: Esc reaches it as a key
        assert type(desk_app.screen).__name__ == "CommandPalette"
