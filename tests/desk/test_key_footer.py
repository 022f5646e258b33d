"""The footer of keys follows the state, and is rebuilt only when the keys it shows change."""

from __future__ import annotations

import pytest
from textual.widgets._footer import FooterKey

from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.widgets.key_footer import KeyFooter
from tests.desk.kit import submit_and_get_reply, wait_until

pytestmark = pytest.mark.anyio


def labels(app: DeskApp) -> list[str]:
    footer = app.screen.query_one(KeyFooter)
    return [key.description for key in footer.query(FooterKey)]


async def test_the_footer_is_rebuilt_when_its_keys_change_and_only_then(
    desk_app: DeskApp, demo_server: DemoModelServer
) -> None:
    demo_server.configure(tokens_per_second=40.0)
    async with desk_app.run_test(size=(120, 30)) as pilot:
        await wait_until(pilot, lambda: "Send" in labels(desk_app), what="the idle keys")
        await pilot.pause(0.2)  # the start-up's own rebuilds are done
        keys = list(desk_app.screen.query_one(KeyFooter).query(FooterKey))
        for _ in range(3):  # the bindings may have changed; what they show did not
            desk_app.refresh_bindings()
            await pilot.pause()
        assert list(desk_app.screen.query_one(KeyFooter).query(FooterKey)) == keys
        reply = await submit_and_get_reply(desk_app, pilot, "Tell me about footers")
        await wait_until(pilot, lambda: "Queue" in labels(desk_app), what="the busy keys")
        await pilot.press("escape")
        await wait_until(pilot, lambda: reply.outcome is not None, what="the reply's end")
        await wait_until(pilot, lambda: "Send" in labels(desk_app), what="the idle keys again")


async def test_a_turn_that_starts_and_ends_relabels_the_keys_in_place(
    desk_app: DeskApp, demo_server: DemoModelServer
) -> None:
    # Send -> Queue (Steer and Stop+send come) and back, Stop alive and dimmed again: the key
    # widgets there are get the new keys in place, only the extra ones come and go (mounting a
    # footer's worth of keys anew was most of the work of the frame saying idle).
    demo_server.configure(tokens_per_second=40.0)
    async with desk_app.run_test(size=(120, 30)) as pilot:
        await wait_until(pilot, lambda: "Send" in labels(desk_app), what="the idle keys")
        await pilot.pause(0.2)  # the start-up's own rebuilds are done
        idle = list(desk_app.screen.query_one(KeyFooter).query(FooterKey))
        idle_labels = labels(desk_app)
        reply = await submit_and_get_reply(desk_app, pilot, "Tell me about footers")
        await wait_until(pilot, lambda: "Queue" in labels(desk_app), what="the busy keys")
        busy = list(desk_app.screen.query_one(KeyFooter).query(FooterKey))
        assert set(idle) < set(busy)  # the same widgets, and the busy keys' two more
        stop = next(key for key in busy if key.action == "stop")
        assert not stop.has_class("-disabled")
        assert labels(desk_app)[:3] == ["Queue", "Steer", "Stop+send"]
        await pilot.press("escape")
        await wait_until(pilot, lambda: reply.outcome is not None, what="the reply's end")
        await wait_until(pilot, lambda: "Send" in labels(desk_app), what="the idle keys again")
        await pilot.pause()
        assert list(desk_app.screen.query_one(KeyFooter).query(FooterKey)) == idle
        assert labels(desk_app) == idle_labels
        stop = next(key for key in idle if key.action == "stop")
        assert stop.has_class("-disabled")
