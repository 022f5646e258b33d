"""The footer of keys follows the state, is drawn again only when the keys it shows change,
and a click on a key presses it."""

from __future__ import annotations

import pytest

from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.widgets.key_footer import KeyFooter
from tests.desk.kit import submit_and_get_reply, wait_until

pytestmark = pytest.mark.anyio


def footer(app: DeskApp) -> KeyFooter:
    return app.screen.query_one(KeyFooter)


def labels(app: DeskApp) -> list[str]:
    return [key.description for key in footer(app).keys]


def enabled(app: DeskApp, action: str) -> bool:
    return next(key.enabled for key in footer(app).keys if key.action == action)


async def test_the_footer_changes_when_its_keys_change_and_only_then(
    desk_app: DeskApp, demo_server: DemoModelServer
) -> None:
    demo_server.configure(tokens_per_second=40.0)
    async with desk_app.run_test(size=(120, 30)) as pilot:
        await wait_until(pilot, lambda: "Send" in labels(desk_app), what="the idle keys")
        await pilot.pause(0.2)  # the start-up's own changes are done
        changes = footer(desk_app).changes
        idle_labels = labels(desk_app)
        assert not enabled(desk_app, "stop")  # nothing to stop: dimmed
        for _ in range(3):  # the bindings may have changed; what they show did not
            desk_app.refresh_bindings()
            await pilot.pause()
        assert footer(desk_app).changes == changes
        reply = await submit_and_get_reply(desk_app, pilot, "Tell me about footers")
        await wait_until(pilot, lambda: "Queue" in labels(desk_app), what="the busy keys")
        # the stop key first while it is live: a narrow footer cuts the last keys
        assert labels(desk_app)[:4] == ["Stop", "Queue", "Steer", "Stop+send"]
        assert enabled(desk_app, "stop")
        await pilot.resize_terminal(40, 30)
        await pilot.pause()
        assert footer(desk_app).render().plain.startswith("esc Stop")
        await pilot.press("escape")
        await wait_until(pilot, lambda: reply.outcome is not None, what="the reply's end")
        await wait_until(pilot, lambda: "Send" in labels(desk_app), what="the idle keys again")
        assert labels(desk_app) == idle_labels
        assert not enabled(desk_app, "stop")


async def test_the_footer_draws_its_keys_on_one_row_and_a_click_presses_one(
    desk_app: DeskApp,
) -> None:
    async with desk_app.run_test(size=(120, 30)) as pilot:
        await wait_until(pilot, lambda: "Help" in labels(desk_app), what="the idle keys")
        await pilot.pause()
        row = footer(desk_app).render().plain
        assert row.startswith("⏎ Send ^j New line ^q Quit")
        assert row.rstrip().endswith("▏^p palette") and len(row) == 120
        column = row.index("f1 Help") + 3
        assert footer(desk_app).key_at(column) is not None
        assert footer(desk_app).key_at(len("⏎ Send")) is None  # the gap after a key
        await pilot.click(KeyFooter, offset=(column, 0))
        await wait_until(
            pilot, lambda: desk_app.screen is not desk_app.screen_stack[0], what="help opened"
        )
