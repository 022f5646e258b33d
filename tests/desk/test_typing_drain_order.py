"""The drain of the keys typed before a Ctrl+Q goes behind them (desk.typing_drain): the
terminal's input thread posts keys as tasks of the app's loop, and a message posted from that
thread the plain way overtook the last keys of the burst (the prompt of ``text⏎ Ctrl+Q`` was
lost, 1 quit in 8 under load)."""

from __future__ import annotations

import random
import threading

import pytest
from textual import events
from textual.app import App
from textual.message import Message

from desk.typing_drain import post_after_keys
from tests.desk.kit import wait_until

pytestmark = pytest.mark.anyio


class Marker(Message):
    """Stands for the drain."""


class Recorder(App[int]):
    """Notes the keys (as they reach the app, before they go to the focus) and the marker, in
    the order the app handles them."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key) and not event.is_forwarded:  # as it reaches the app
            self.seen.append(event.key)
        await super().on_event(event)

    def on_marker(self, _message: Marker) -> None:
        self.seen.append("marker")


def type_then_post(app: Recorder, keys: str) -> None:
    """As the input thread does: the keys through the driver, then the marker."""
    driver = app._driver
    assert driver is not None

    def run() -> None:
        for key in keys:
            driver.process_message(events.Key(key, key))
        post_after_keys(app, Marker())

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()  # the loop is held meanwhile: all of it is queued before it runs again


async def test_the_drain_arrives_after_every_key_posted_before_it() -> None:
    app = Recorder()
    async with app.run_test() as pilot:
        type_then_post(app, "abc")
        await wait_until(pilot, lambda: "marker" in app.seen, what="the marker")
        assert app.seen == ["a", "b", "c", "marker"]


async def test_bursts_of_any_length_keep_the_drain_last() -> None:
    rng = random.Random(7)
    app = Recorder()
    async with app.run_test() as pilot:
        for _ in range(20):
            keys = "".join(rng.choice("xyz") for _ in range(rng.randint(0, 12)))
            app.seen.clear()
            type_then_post(app, keys)
            await wait_until(pilot, lambda: "marker" in app.seen, what="the marker")
            await pilot.pause()
            assert app.seen == [*keys, "marker"]


async def test_on_the_apps_own_thread_it_is_queued_at_once() -> None:
    app = Recorder()
    async with app.run_test() as pilot:
        post_after_keys(app, Marker())
        await wait_until(pilot, lambda: app.seen == ["marker"], what="the marker")
