"""Prompts typed in one burst with stop keys between them (``one⏎ Esc two⏎ Esc three⏎``, read
at once from the terminal): the transcript shows them in the order the gateway ran them (its
``message.start`` order), as ``/export`` and ``--resume`` do."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from textual import events, on

import desk.widgets.transcript as transcript_module
from agent.events import TurnResult
from contract.events import MessageStart
from desk.app import DeskApp
from desk.config import ConnectionInfo
from desk.controllers.view import ShownSession
from desk.widgets import PromptInput, UserPrompt
from tests.desk.kit import submit, wait_until
from tests.support import EventLog, poll_until, running_demo
from tui_gateway.gateway import Gateway, GatewayConfig, ProviderConfig
from tui_gateway.sessions.state import Session, Turn

pytestmark = pytest.mark.anyio

STOP_KEYS = ("escape", "ctrl+c")


def terminal_burst(app: DeskApp, *keys: str, input_thread: bool = True) -> None:
    """Deliver ``keys`` as the terminal's input thread does with one read: a stop key goes to
    the app's stop first (before any key of the burst is handled), and on to the app only
    when that lets it through; every other key is posted at once. A key is a word (its
    characters), ``enter``, ``escape`` or ``ctrl+x``. With ``input_thread`` False every key is
    only posted (as under Pilot, or a driver without the input thread's stop)."""
    for key in keys:
        if key == "enter":
            app.post_message(events.Key("enter", "\r"))
        elif key == "escape":
            event = events.Key("escape", "\x1b")
            taken = input_thread and app.stop_from_input_thread(
                "escape", time.monotonic(), event.time
            )
            if not taken:
                app.post_message(event)
        elif key.startswith("ctrl+"):
            event = events.Key(key, chr(ord(key[-1]) - ord("a") + 1))
            taken = (
                input_thread
                and key in STOP_KEYS
                and app.stop_from_input_thread(key, time.monotonic(), event.time)
            )
            if not taken:
                app.post_message(event)
        else:
            for character in key:
                app.post_message(events.Key("space" if character == " " else character, character))


def shown_prompts(app: DeskApp) -> list[str]:
    """The prompt blocks of the transcript, top to bottom."""
    return [p.text for p in app.transcript.query(UserPrompt)]


@pytest.mark.parametrize("tokens_per_second", [400.0])
async def test_a_prompt_run_at_its_submit_stays_below_a_stopped_one_drawn_while_it_mounts(
    desk_app: DeskApp,
    gateway: Gateway,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    # one⏎ Esc two⏎ Esc three⏎: the gateway stopped one, ran two from its queue (stopped as
    # it started), and ran three at its submit. The screen was still mounting three (shown as
    # sent) when the view drew two's start: two went below three (one three two on screen).
    turns = desk_app.controllers.turns
    drawn = turns.started
    draw = asyncio.Event()  # the view draws the turns' starts (and what follows) when set
    two_drawn = asyncio.Event()

    async def started_late(
        view: ShownSession, payload: MessageStart, at: float | None = None
    ) -> None:
        await draw.wait()
        await drawn(view, payload, at)
        if payload.prompt == "two":
            two_drawn.set()

    class SlowPrompt(UserPrompt):
        """three's block mounts only once two's start is drawn."""

        @on(events.Mount)
        async def held(self) -> None:
            if self.text == "three":
                await two_drawn.wait()

    # one ends only once two waits in the queue behind it (else two ran at its submit when
    # one's stop ended it first: a race of the UI's submit against the stopped turn's end)
    booking = gateway._runner._booking
    settle = booking.settle

    def one_ends_after_two_queued(session: Session, turn: Turn, result: TurnResult) -> TurnResult:
        if turn.prompt == "one":
            poll_until(lambda: gateway.session_queue(session.session_id), 30.0)
        return settle(session, turn, result)

    monkeypatch.setattr(booking, "settle", one_ends_after_two_queued)
    monkeypatch.setattr(transcript_module, "UserPrompt", SlowPrompt)
    turns.started = started_late  # type: ignore[method-assign]
    async with desk_app.run_test(size=(120, 40)) as pilot:
        try:
            desk_app.query_one(PromptInput).focus()
            terminal_burst(desk_app, "one", "enter", "escape", "two", "enter", "escape")
            view = desk_app.view
            # None: Pilot's pause waits for the view, which waits for ``draw``
            await wait_until(None, lambda: len(view.queue) == 1, what="two queued")
            two = view.queue.queued[0].key
            await wait_until(None, lambda: desk_app._bridge.turn_ended(two), what="two's end")
            terminal_burst(desk_app, "three", "enter")
            await wait_until(None, lambda: "three" in shown_prompts(desk_app), what="three")
        finally:
            draw.set()
        await wait_until(pilot, two_drawn.is_set, what="two's start drawn")
        await wait_until(pilot, lambda: len(desk_app.transcript.reply_turn_ids) == 3)
        await wait_until(pilot, lambda: gateway.running_turns == 0, what="the last end")
        await pilot.pause()
        assert shown_prompts(desk_app) == ["one", "two", "three"]
        target = tmp_path / "x.md"
        await submit(pilot, f"/export {target}")
        await wait_until(pilot, target.exists, what="the export")
    assert exported_prompts(target.read_text()) == ["one", "two", "three"]


def exported_prompts(markdown: str) -> list[str]:
    """The prompts of an ``/export`` file, in order (each the paragraph under ``## You``)."""
    return [part.split("\n\n", 1)[0].strip() for part in markdown.split("## You\n\n")[1:]]


STEPS = st.lists(
    st.tuples(
        st.sampled_from(["enter", "enter", "ctrl+s", "ctrl+t"]),  # how the prompt goes
        st.sampled_from([(), ("escape",), ("escape", "escape")]),  # stop keys behind it
    ),
    min_size=2,
    max_size=6,
)


@settings(
    max_examples=5,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    steps=STEPS,
    prompt_delay_s=st.sampled_from([0.0, 0.05, 0.3]),
    input_thread=st.booleans(),
    mount_s=st.sampled_from([0.0, 0.02]),
    view_late_s=st.sampled_from([0.0, 0.1]),
)
async def test_any_burst_of_prompts_sends_and_stops_shows_the_prompts_in_the_run_order(
    steps: list[tuple[str, tuple[str, ...]]],
    prompt_delay_s: float,
    input_thread: bool,
    mount_s: float,
    view_late_s: float,
) -> None:
    # A slow screen: each prompt block's mount takes ``mount_s`` (the view draws the gateway's
    # events meanwhile), and the view draws the first start ``view_late_s`` late (the gateway
    # runs ahead of the screen, as on a loaded machine).
    keys: list[str] = []
    for n, (send, stops) in enumerate(steps, start=1):
        keys += [f"p{n}", send, *stops]
    with running_demo(400.0) as server, pytest.MonkeyPatch.context() as patch:
        patch.setattr(transcript_module, "UserPrompt", slow_prompts(mount_s))
        server.configure(prompt_delay_s=prompt_delay_s)
        gateway = Gateway(
            GatewayConfig(provider=ProviderConfig(base_url=server.base_url, model="demo"))
        )
        try:
            info = ConnectionInfo("demo", server.base_url, is_demo=True, source="--demo")
            app = DeskApp(gateway, info, handle_signals=False)
            log = EventLog()  # the gateway's own events, in its order
            gateway.subscribe(log)
            shown, drawn = await run_burst(app, gateway, keys, input_thread, view_late_s)
            assert log.wait_for(lambda _: len(log.of_type(MessageStart)) >= len(drawn))
        finally:
            gateway.shutdown(timeout_s=5.0)
    assert shown == [start.turn_id for start in log.of_type(MessageStart)]


def slow_prompts(mount_s: float) -> type[UserPrompt]:
    """Prompt blocks whose mount takes ``mount_s`` seconds."""

    class SlowPrompt(UserPrompt):
        @on(events.Mount)
        async def held(self) -> None:
            await asyncio.sleep(mount_s)

    return SlowPrompt


async def run_burst(
    app: DeskApp, gateway: Gateway, keys: list[str], input_thread: bool, late_s: float = 0.0
) -> tuple[list[str], list[str]]:
    """Type ``keys`` in one burst (see :func:`terminal_burst`) and let every turn end; returns
    the turn ids of the prompts the transcript shows whose turn started (top to bottom), and
    the turns whose start the screen drew. The view draws the first start ``late_s`` seconds
    late."""
    turns = app.controllers.turns
    drawn = turns.started
    started: list[str] = []

    async def recorded(view: ShownSession, payload: MessageStart, at: float | None = None) -> None:
        if not started:
            await asyncio.sleep(late_s)
        started.append(payload.turn_id)  # the view handles the gateway's events in order
        await drawn(view, payload, at)

    turns.started = recorded  # type: ignore[method-assign]
    async with app.run_test(size=(120, 40)) as pilot:
        app.query_one(PromptInput).focus()
        terminal_burst(app, *keys, input_thread=input_thread)
        view = app.view

        def settled() -> bool:
            return (
                gateway.running_turns == 0
                and not gateway.session_queue(app.session_id)
                and all(app._bridge.turn_ended(t) for t in started)
                and all(app.transcript.reply(t) is not None for t in started)
            )

        for _ in range(3):  # idle three times in a row: no key or event left to handle
            await wait_until(pilot, settled, what="every turn's end")
            await view.drained()
            await pilot.pause()
        blocks = [p.turn_id for p in app.transcript.query(UserPrompt) if p.turn_id in started]
    return blocks, started
