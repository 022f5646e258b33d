"""Prompts typed in one fast burst (a terminal delivers every key at once): the transcript
keeps the gateway's order, and a steer or "stop and send" right behind an Enter acts on the
turn that Enter started."""

from __future__ import annotations

import asyncio
import threading

import pytest
from textual import events

from contract.envelope import GatewayEvent
from contract.events import MessageStart
from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.bridge import GatewayBridge
from desk.controllers.view import ShownSession
from desk.widgets import PromptInput, UserPrompt
from tests.desk.kit import wait_until
from tui_gateway.gateway import Gateway

pytestmark = pytest.mark.anyio


def burst(app: DeskApp, *keys: str) -> None:
    """Post ``keys`` as a terminal delivers a burst (Pilot would wait between keys): a key
    is a character, ``enter`` or ``ctrl+x``."""
    for key in keys:
        if key == "enter":
            app.post_message(events.Key("enter", "\r"))
        elif key.startswith("ctrl+"):
            app.post_message(events.Key(key, chr(ord(key[-1]) - ord("a") + 1)))
        else:
            for character in key:
                name = "space" if character == " " else character
                app.post_message(events.Key(name, character))


def shown_prompts(app: DeskApp) -> list[str]:
    """The prompt blocks of the transcript, top to bottom."""
    return [p.text for p in app.transcript.query(UserPrompt)]


@pytest.mark.parametrize("tokens_per_second", [400.0])
async def test_a_prompt_shown_as_sent_stays_below_a_queued_one_drawn_late(
    desk_app: DeskApp, gateway: Gateway, demo_server: DemoModelServer
) -> None:
    # The gateway ran K1, then K2 from its queue, and both ended before the Enter of K3
    # reached it; the screen had not drawn K2's start yet. K3, shown as sent, ended above K2.
    demo_server.configure(prompt_delay_s=0.5)  # K1 still runs when K2's Enter arrives
    turns = desk_app.controllers.turns
    drawn = turns.started
    draw = asyncio.Event()  # the screen draws the turns' starts (and what follows) when set

    async def started_late(
        view: ShownSession, payload: MessageStart, at: float | None = None
    ) -> None:
        await draw.wait()
        await drawn(view, payload, at)

    turns.started = started_late  # type: ignore[method-assign]
    async with desk_app.run_test(size=(120, 40)) as pilot:
        try:
            desk_app.query_one(PromptInput).focus()
            burst(desk_app, "K1", "enter", "K2", "enter")
            view = desk_app.view
            # None: Pilot's pause waits for the view, which waits for ``draw``
            await wait_until(None, lambda: len(view.queue) == 1, what="K2 queued")
            k2 = view.queue.queued[0].key
            await wait_until(None, lambda: desk_app._bridge.turn_ended(k2), what="K2's end")
            burst(desk_app, "K3", "enter")
            await wait_until(None, lambda: "K3" in shown_prompts(desk_app), what="K3 shown")
        finally:
            draw.set()
        await wait_until(pilot, lambda: len(desk_app.transcript.reply_turn_ids) == 3)
        await wait_until(pilot, lambda: gateway.running_turns == 0, what="the last end")
        assert shown_prompts(desk_app) == ["K1", "K2", "K3"]
        replies = [desk_app.transcript.reply(t) for t in desk_app.transcript.reply_turn_ids]
        blocks = list(desk_app.transcript.children)
        order = [blocks.index(b) for b in (*desk_app.transcript.query(UserPrompt), *replies)]
        prompts_at, replies_at = order[:3], order[3:]
        assert all(p < r for p, r in zip(prompts_at, replies_at, strict=True))
        assert replies_at[0] < prompts_at[1] and replies_at[1] < prompts_at[2]


def prompt_statuses(app: DeskApp) -> list[tuple[str, str]]:
    """(text, status) of the prompt blocks, top to bottom."""
    return [(p.text, p.status) for p in app.transcript.query(UserPrompt)]


@pytest.mark.parametrize("tokens_per_second", [8.0])  # the first turn outlasts the test
async def test_ctrl_t_right_behind_enter_steers_the_turn_that_enter_started(
    desk_app: DeskApp, gateway: Gateway
) -> None:
    async with desk_app.run_test(size=(120, 40)) as pilot:
        desk_app.query_one(PromptInput).focus()
        burst(desk_app, "first", "enter", "steer text", "ctrl+t")
        await wait_until(
            pilot, lambda: len(prompt_statuses(desk_app)) == 2, what="both prompts shown"
        )
        await pilot.pause()
        assert gateway.session_queue(desk_app.session_id) == []  # not queued behind it
        assert not desk_app.view.queue.queued
        (first, first_status), (steer, steer_status) = prompt_statuses(desk_app)
        assert (first, steer) == ("first", "steer text")
        assert steer_status in ("steer", "steered")


@pytest.mark.parametrize("tokens_per_second", [8.0])  # the first turn outlasts the test
async def test_ctrl_s_right_behind_enter_stops_the_turn_that_enter_started(
    desk_app: DeskApp, gateway: Gateway, demo_server: DemoModelServer
) -> None:
    # Replies with no end in sight: a markdown reply at 8 tok/s ended by itself before the Esc
    # below when the machine was busy enough, so that Esc stopped nothing.
    demo_server.configure(reply_shape="paragraph", max_tokens=4000)
    async with desk_app.run_test(size=(120, 40)) as pilot:
        desk_app.query_one(PromptInput).focus()
        burst(desk_app, "first", "enter", "now this", "ctrl+s")
        await wait_until(pilot, lambda: len(desk_app.transcript.reply_turn_ids) == 2)
        first, second = desk_app.transcript.reply_turn_ids
        turn = gateway.turn(desk_app.session_id, first)
        assert turn.done.wait(10.0)
        assert turn.result is not None and turn.result.exit_reason == "interrupted_by_user"
        assert [text for text, _status in prompt_statuses(desk_app)] == ["first", "now this"]
        await pilot.press("escape")  # maybe before the screen shows the second turn running
        stopped = gateway.turn(desk_app.session_id, second)
        await wait_until(pilot, stopped.done.is_set, what="the second turn's end")
        assert stopped.result is not None
        assert stopped.result.exit_reason == "interrupted_by_user"


async def test_a_stop_key_while_the_screen_shows_nothing_running_stops_what_runs(
    desk_app: DeskApp, gateway: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The gateway runs a turn whose start the screen has not drawn yet (the next prompt's, a
    # moment after the last one ended, on a busy machine): Stop is dimmed on screen, and the
    # stop key goes to the gateway all the same. It used to go to the widgets only: the turn
    # ran on while the screen, a moment later, showed it streaming.
    held, release = threading.Event(), threading.Event()
    deliver = GatewayBridge._deliver

    def held_start(bridge: GatewayBridge, event: GatewayEvent) -> None:
        if isinstance(event.payload, MessageStart):
            held.set()
            release.wait(30.0)
        deliver(bridge, event)

    monkeypatch.setattr(GatewayBridge, "_deliver", held_start)
    async with desk_app.run_test(size=(120, 40)) as pilot:
        desk_app.query_one(PromptInput).focus()
        turn_id = gateway.prompt_submit(desk_app.session_id, "hello").turn_id
        try:
            await wait_until(pilot, held.is_set, what="the turn's start on its way")
            assert desk_app.running_turn is None  # the screen shows nothing running
            await pilot.press("escape")
            turn = gateway.turn(desk_app.session_id, turn_id)
            assert turn.agent.stop_request is not None
        finally:
            release.set()
        await wait_until(pilot, turn.done.is_set, what="the turn's end")
        assert turn.result is not None and turn.result.exit_reason == "interrupted_by_user"
