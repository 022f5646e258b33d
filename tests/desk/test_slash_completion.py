"""Tab completes slash commands in the prompt box and lists the candidates just above it."""

from __future__ import annotations

import pytest
from textual.pilot import Pilot

from desk import slash
from desk.app import DeskApp
from desk.slash import SlashCommand
from desk.widgets import PromptInput
from desk.widgets.slash_hints import SlashHints
from tests.desk.kit import wait_until

pytestmark = pytest.mark.anyio

SIZE = (100, 30)


@pytest.fixture
def twin_commands(monkeypatch: pytest.MonkeyPatch) -> list[SlashCommand]:
    """Two made-up commands that share the prefix ``zz-alp`` (gone after the test)."""
    twins = [
        SlashCommand("zz-alpha", "[N]", "first made-up command"),
        SlashCommand("zz-alpine", "", "second made-up command"),
    ]
    monkeypatch.setattr(slash, "SLASH_COMMANDS", [*slash.SLASH_COMMANDS, *twins])
    return twins


def _box(app: DeskApp) -> PromptInput:
    return app.query_one(PromptInput)


def _hints(app: DeskApp) -> list[str]:
    """The rows the hint list shows ([] while it is hidden or not mounted)."""
    found = app.query(SlashHints)
    if not found or not found.first().display:
        return []
    return found.first().lines


def _tab_action(app: DeskApp) -> str:
    """What Tab does now, as the footer and the help see it."""
    return app.screen.active_bindings["tab"].binding.action


async def _type(pilot: Pilot[object], text: str) -> None:
    box = pilot.app.query_one(PromptInput)
    box.focus()
    await pilot.press(*text)
    await wait_until(pilot, lambda: box.text == text, what=f"{text!r} typed")


async def test_tab_completes_a_unique_prefix(desk_app: DeskApp) -> None:
    async with desk_app.run_test(size=SIZE) as pilot:
        box = _box(desk_app)
        await _type(pilot, "/th")
        await wait_until(pilot, lambda: _tab_action(desk_app) == "complete_slash", what="Tab")
        assert desk_app.screen.active_bindings["tab"].binding.description == "Complete"
        await pilot.press("tab")
        await wait_until(pilot, lambda: box.text == "/theme ", what="the completed name")
        assert box.cursor_location == (0, len("/theme "))
        assert desk_app.focused is box
        # The completed command's usage and help stay shown while its argument is typed.
        await wait_until(pilot, lambda: len(_hints(desk_app)) == 1, what="the usage line")
        assert "/theme [NAME]" in _hints(desk_app)[0]
        assert "switch the colour theme" in _hints(desk_app)[0]


async def test_tab_on_an_ambiguous_prefix_completes_the_common_part_and_lists_them(
    desk_app: DeskApp, twin_commands: list[SlashCommand]
) -> None:
    async with desk_app.run_test(size=SIZE) as pilot:
        box = _box(desk_app)
        await _type(pilot, "/z")
        await wait_until(pilot, lambda: len(_hints(desk_app)) == 2, what="live candidates")
        await pilot.press("tab")
        await wait_until(pilot, lambda: box.text == "/zz-alp", what="the common prefix")
        assert box.cursor_location == (0, len("/zz-alp"))
        rows = _hints(desk_app)
        assert len(rows) == 2
        assert "/zz-alpha [N]" in rows[0] and "first made-up command" in rows[0]
        assert "/zz-alpine" in rows[1] and "second made-up command" in rows[1]
        assert not any(row.startswith("›") for row in rows)  # nothing chosen yet
        # The list floats just above the prompt box's row, over the transcript.
        hints = desk_app.query_one(SlashHints)
        row = desk_app.query_one("#input-row")
        assert hints.region.bottom == row.region.y
        assert hints.region.x == row.region.x


async def test_tab_again_goes_through_the_candidates(
    desk_app: DeskApp, twin_commands: list[SlashCommand]
) -> None:
    async with desk_app.run_test(size=SIZE) as pilot:
        box = _box(desk_app)
        await _type(pilot, "/zz")
        await pilot.press("tab")
        await wait_until(pilot, lambda: box.text == "/zz-alp", what="the common prefix")
        for expected in ("/zz-alpha", "/zz-alpine", "/zz-alpha"):
            await pilot.press("tab")
            await wait_until(pilot, lambda e=expected: box.text == e, what=expected)
            assert box.cursor_location == (0, len(expected))
            chosen = [row for row in _hints(desk_app) if row.startswith("›")]
            assert len(chosen) == 1 and chosen[0].startswith(f"› {expected} ")
        assert len(_hints(desk_app)) == 2  # the list stays while going through it
        await pilot.press("x")  # an edit ends the round
        await wait_until(pilot, lambda: _hints(desk_app) == [], what="the list to go")


async def test_an_unknown_prefix_inserts_nothing_and_says_so(desk_app: DeskApp) -> None:
    async with desk_app.run_test(size=SIZE) as pilot:
        box = _box(desk_app)
        await _type(pilot, "/xyz")
        assert _hints(desk_app) == []  # typing alone shows no complaint
        await pilot.press("tab")
        await wait_until(
            pilot,
            lambda: _hints(desk_app) == ["no command starts with /xyz"],
            what="the no-match message",
        )
        assert box.text == "/xyz"
        assert desk_app.focused is box
        await pilot.press("tab")  # again: still nothing inserted
        await wait_until(pilot, lambda: _hints(desk_app) != [], what="the message")
        assert box.text == "/xyz"
        await pilot.press("backspace", "backspace", "backspace", "backspace")
        await wait_until(pilot, lambda: box.text == "", what="the text to go")
        await wait_until(pilot, lambda: _hints(desk_app) == [], what="the message to go")


async def test_tab_outside_a_slash_command_does_nothing(desk_app: DeskApp) -> None:
    async with desk_app.run_test(size=SIZE) as pilot:
        box = _box(desk_app)
        stop = desk_app.query_one("#stop")
        stop.disabled = False  # a second focusable widget, as while a turn runs
        for text in ("hello", "/theme ", "//etc", "two\n/lines"):
            box.focus()
            box.text = text
            await wait_until(pilot, lambda: desk_app.focused is box, what="the prompt focused")
            await pilot.press("tab")
            assert desk_app.focused is box, f"the focus moved after {text!r}"
            assert box.text == text
            assert "\t" not in box.text
        assert not any(row.startswith("no command") for row in _hints(desk_app))
        await pilot.press("shift+tab")  # the focus moves on purpose
        await wait_until(pilot, lambda: desk_app.focused is not box, what="Shift+Tab")


async def test_the_completed_command_runs_on_enter_and_the_list_goes(
    desk_app: DeskApp,
) -> None:
    async with desk_app.run_test(size=SIZE) as pilot:
        box = _box(desk_app)
        await _type(pilot, "/th")
        await pilot.press("tab")
        await wait_until(pilot, lambda: box.text == "/theme ", what="the completed name")
        await pilot.press(*"light")
        await wait_until(pilot, lambda: box.text == "/theme light", what="the argument")
        assert _hints(desk_app) != []
        await pilot.press("enter")
        await wait_until(pilot, lambda: desk_app.theme == "light", what="/theme to run")
        await wait_until(pilot, lambda: box.text == "", what="the box to clear")
        await wait_until(pilot, lambda: _hints(desk_app) == [], what="the list to go")
        assert _tab_action(desk_app) == "app.focus_next"


async def test_console_commands_complete_too(desk_app: DeskApp) -> None:
    async with desk_app.run_test(size=SIZE) as pilot:
        box = _box(desk_app)
        await _type(pilot, "/he")
        await pilot.press("tab")
        await wait_until(pilot, lambda: box.text == "/help ", what="/help")
