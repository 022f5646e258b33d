"""Pilot tests of steering and child agents, over a real gateway and demo model server.

While a turn runs, Enter queues (``busy_input = "queue"``, the default) or steers
(``"steer"``), Ctrl+T does the other, Ctrl+S stops the turn and sends at once; the footer
names each. A ``delegate`` call shows a child agent's card under its tool card, with its live
output and a Stop of its own.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.provider.client import ProviderConfig
from agent.stops import StopRequest, Surface
from agent.store import SqliteStore
from contract.events import (
    ChildCompleted,
    ChildStarted,
    MessageComplete,
    MessageDelta,
    PromptSteered,
    ToolStart,
)
from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.widgets.agent_card import AgentCard
from desk.widgets.prompt_input import PromptInput
from desk.widgets.saved_reply import SavedReply
from desk.widgets.saved_tool_calls import SavedToolCalls
from desk.widgets.user_prompt import UserPrompt
from tests.desk.kit import click_until, connection, drawn, submit, wait_until
from tests.support import EventLog
from tui_gateway.gateway import Gateway, GatewayConfig

pytestmark = pytest.mark.anyio

SAID = " ".join(f"word{i}" for i in range(120))
WORDS = f"reply with exactly: {SAID}"


@pytest.fixture
def gateway(demo_server: DemoModelServer, tmp_path: Path) -> Iterator[tuple[Gateway, EventLog]]:
    demo_server.configure(slots=3)
    provider = ProviderConfig(base_url=demo_server.base_url, model="demo")
    gw = Gateway(GatewayConfig(provider=provider, cwd=tmp_path, approvals=False))
    log = EventLog()
    gw.subscribe(log)
    try:
        yield gw, log
    finally:
        assert gw.shutdown(timeout_s=5.0).threads_left == []


def desk(gateway: Gateway, demo: DemoModelServer, busy_input: str = "queue") -> DeskApp:
    return DeskApp(
        gateway,
        connection(demo.base_url),
        handle_signals=False,
        busy_input=busy_input,  # type: ignore[arg-type]
    )


def footer_actions(app: DeskApp) -> dict[str, str]:
    """What the footer shows for the prompt box's keys now: key -> description."""
    box = app.query_one(PromptInput)
    return {
        key: active.binding.description
        for key, active in app.screen.active_bindings.items()
        if active.node is box and active.binding.show
    }


async def running(app: DeskApp, pilot: object) -> str:
    await wait_until(pilot, lambda: app.running_turn is not None, what="a running turn")  # type: ignore[arg-type]
    turn = app.running_turn
    assert turn is not None
    return turn


@pytest.mark.parametrize("busy_input", ["queue", "steer"])
async def test_the_footer_says_what_enter_and_ctrl_t_do_while_a_turn_runs(
    busy_input: str, gateway: tuple[Gateway, EventLog], demo_server: DemoModelServer
) -> None:
    gw, _log = gateway
    demo_server.configure(tokens_per_second=20.0)
    app = desk(gw, demo_server, busy_input)
    async with app.run_test(size=(120, 40)) as pilot:
        idle = footer_actions(app)
        assert idle.get("enter") == "Send" and "ctrl+s" not in idle and "ctrl+t" not in idle
        await submit(pilot, "tell me a long story")
        await running(app, pilot)
        await wait_until(pilot, lambda: app.query_one(PromptInput).busy, what="a busy box")
        busy = footer_actions(app)
        enter, other = ("Queue", "Steer") if busy_input == "queue" else ("Steer", "Queue")
        assert (busy["enter"], busy["ctrl+t"], busy["ctrl+s"]) == (enter, other, "Stop+send")


async def test_enter_steers_when_set_to_and_the_steer_lands_where_the_turn_took_it(
    gateway: tuple[Gateway, EventLog], demo_server: DemoModelServer
) -> None:
    gw, log = gateway
    demo_server.configure(tokens_per_second=40.0)
    app = desk(gw, demo_server, "steer")
    async with app.run_test(size=(120, 40)) as pilot:
        await submit(pilot, WORDS)
        turn = await running(app, pilot)
        await submit(pilot, "reply with exactly: nine")
        await wait_until(pilot, lambda: log.of_type(MessageComplete), what="the turn's end")
        await wait_until(pilot, lambda: app.running_turn is None, what="idle")
        (steered,) = log.of_type(PromptSteered)
        block = app.transcript.prompt(steered.steer_id)
        assert block is not None and block.status == "steered"
        first = app.transcript.query_one(f"#reply-{turn}")
        order = list(app.transcript.children)
        assert order.index(first) < order.index(block)  # the first reply, then the steer
        assert first.text == SAID  # never cut
        rest = app.transcript.reply(turn)
        assert rest is not None and rest.text == "nine" and order.index(block) < order.index(rest)


async def test_ctrl_t_steers_when_enter_queues_and_ctrl_s_stops_and_sends(
    gateway: tuple[Gateway, EventLog], demo_server: DemoModelServer
) -> None:
    gw, log = gateway
    demo_server.configure(tokens_per_second=20.0)
    app = desk(gw, demo_server)
    async with app.run_test(size=(120, 40)) as pilot:
        await submit(pilot, "tell me a long story")
        turn = await running(app, pilot)
        box = app.query_one(PromptInput)
        box.text = "and a moral"
        await pilot.press("ctrl+t")
        await wait_until(pilot, lambda: box.text == "", what="the steer sent")
        assert [p.status for p in app.transcript.query(UserPrompt)][-1] == "steer"
        box.text = "reply with exactly: right now"
        # the turns that follow run whole: a pace taken by a request when it arrives, so
        # the running turn keeps its own
        demo_server.configure(tokens_per_second=400.0)
        await pilot.press("ctrl+s")

        def done(turn_id: str) -> bool:
            return any(c.turn_id == turn_id for c in log.of_type(MessageComplete))

        await wait_until(pilot, lambda: done(turn), what="the stopped turn")
        stopped = next(c for c in log.of_type(MessageComplete) if c.turn_id == turn)
        assert stopped.exit_reason == "interrupted_by_user"
        assert stopped.stop is not None and stopped.stop.reason == "stopped to send a new prompt"
        completes = lambda: [c for c in log.of_type(MessageComplete) if c.turn_id != turn]  # noqa: E731
        await wait_until(pilot, lambda: len(completes()) == 2, timeout_s=30, what="both prompts")
        # stop and send ran first; the steer the stopped turn never took ran after it
        assert completes()[0].text == "right now"
        assert completes()[1].turn_id == stopped.undelivered[0]


async def test_a_child_agent_card_shows_live_output_and_its_stop_stops_it_alone(
    gateway: tuple[Gateway, EventLog], demo_server: DemoModelServer
) -> None:
    gw, log = gateway
    app = desk(gw, demo_server)
    async with app.run_test(size=(120, 40)) as pilot:
        await submit(pilot, "delegate: [demo tps=10] map the north")
        await wait_until(pilot, lambda: app.controllers.agents.cards, what="a child's card")
        (card,) = app.controllers.agents.cards
        assert card.agent_task == "[demo tps=10] map the north" and card.running
        await wait_until(pilot, lambda: card.text, what="the child's live output")
        call = next(c for c in app.controllers.tools.cards if c.tool == "delegate")
        siblings = list(card.parent.children)  # type: ignore[union-attr]
        assert siblings.index(call) + 1 == siblings.index(card)  # right under its call
        stop = card.query_one(".stop")
        await click_until(pilot, stop, lambda: log.of_type(ChildCompleted), what="its stop")
        await wait_until(pilot, lambda: not card.running, what="the card's outcome")
        (ended,) = log.of_type(ChildCompleted)
        assert ended.exit_reason == "interrupted_by_user"
        await wait_until(pilot, lambda: log.of_type(MessageComplete), timeout_s=15, what="parent")
        (parent,) = log.of_type(MessageComplete)
        assert parent.status == "completed"  # the parent went on
        assert "the person stopped the child agent" in parent.text
        assert "stopped by you" in card.query_one(".outcome").render().plain  # type: ignore[attr-defined]


async def test_a_background_child_counts_in_its_own_session_only(
    gateway: tuple[Gateway, EventLog], demo_server: DemoModelServer
) -> None:
    gw, log = gateway
    demo_server.configure(slots=2)
    app = desk(gw, demo_server)
    async with app.run_test(size=(120, 40)) as pilot:
        first = app.session_id
        await submit(pilot, "delegate in background: [demo tps=10] map the north")
        await wait_until(pilot, lambda: log.of_type(MessageComplete), what="the parent's end")
        await wait_until(pilot, lambda: app.status_bar.agents == 1, what="'1 agent running'")
        await app.action_new_session()
        await wait_until(pilot, lambda: app.session_id != first, what="the new session")
        assert app.status_bar.agents == 0  # the child runs in the session left
        assert app.controllers.agents.cards == []
        assert not app.check_action("stop", ())  # nothing of this session to stop
        await app.controllers.sessions.open_requested(first)  # back: counted there again
        await wait_until(pilot, lambda: app.status_bar.agents == 1, what="counted again")
        (card,) = app.controllers.agents.cards
        assert card.running and app.check_action("stop", ())
    gw.shutdown(timeout_s=10)
    (ended,) = log.of_type(ChildCompleted)
    assert ended.exit_reason.startswith("interrupted_by_system")  # the quit, nobody else


async def test_a_resumed_session_shows_steers_and_its_children(
    demo_server: DemoModelServer, tmp_path: Path
) -> None:
    demo_server.configure(slots=3, tokens_per_second=40.0)
    provider = ProviderConfig(base_url=demo_server.base_url, model="demo")
    store = SqliteStore(tmp_path / "desk.db")
    gw = Gateway(GatewayConfig(provider=provider, cwd=tmp_path, approvals=False), store=store)
    log = EventLog()
    gw.subscribe(log)
    try:
        session = gw.session_create()
        turn = gw.prompt_submit(session, WORDS).turn_id
        assert log.wait_for(lambda ev: any(isinstance(e.payload, MessageDelta) for e in ev))
        gw.prompt_steer(
            session, "reply with exactly: more", StopRequest.soft(Surface.DESK_KEY, "t")
        )
        log.complete(turn, timeout=15)
        child_turn = gw.prompt_submit(session, "delegate: reply with exactly: child done").turn_id
        log.complete(child_turn, timeout=15)
        entries = gw.session_resume(session).transcript
        app = DeskApp(gw, connection(demo_server.base_url), handle_signals=False)
        async with app.run_test(size=(120, 40)) as pilot:
            await app.controllers.sessions.show(session, entries)
            await pilot.pause()
            prompts = list(app.transcript.query(UserPrompt))
            assert [p.status for p in prompts] == ["sent", "steered", "sent"]
            (card,) = app.transcript.query(AgentCard)
            assert card.outcome == "completed" and card.text == "child done"
    finally:
        assert gw.shutdown(timeout_s=5.0).threads_left == []


async def test_esc_stops_a_background_child_that_outlived_its_turn_and_idle_stays(
    gateway: tuple[Gateway, EventLog], demo_server: DemoModelServer
) -> None:
    gw, log = gateway
    app = desk(gw, demo_server)
    async with app.run_test(size=(120, 40)) as pilot:
        await submit(pilot, "delegate in background: [demo tps=10] map the north")
        await wait_until(pilot, lambda: app.controllers.agents.cards, what="a child's card")
        (card,) = app.controllers.agents.cards
        await wait_until(pilot, lambda: log.of_type(MessageComplete), what="the turn's end")
        await wait_until(pilot, lambda: app.status_bar.state == "idle", what="idle")
        assert card.running  # only the child runs now
        await wait_until(
            pilot, lambda: "1 agent running" in app.status_bar.turn_text(), what="it says so"
        )
        await pilot.press("escape")
        await wait_until(pilot, lambda: not card.running, what="the card's outcome")
        (ended,) = log.of_type(ChildCompleted)
        assert ended.exit_reason == "interrupted_by_user"
        assert "stopped by you" in card.query_one(".outcome").render().plain  # type: ignore[attr-defined]
        assert card.state_text().startswith("■ stopped by you")  # the header in words
        await pilot.pause()
        assert app.status_bar.state == "idle"  # no session turn was stopping
        assert "agent" not in app.status_bar.turn_text()


@pytest.fixture
def saved(demo_server: DemoModelServer, tmp_path: Path) -> Iterator[tuple[Gateway, EventLog]]:
    """A gateway saving to a database (sessions resume from it), no approvals asked."""
    demo_server.configure(slots=3)
    provider = ProviderConfig(base_url=demo_server.base_url, model="demo")
    gw = Gateway(
        GatewayConfig(provider=provider, cwd=tmp_path, approvals=False),
        store=SqliteStore(tmp_path / "desk.db"),
    )
    log = EventLog()
    gw.subscribe(log)
    try:
        yield gw, log
    finally:
        assert gw.shutdown(timeout_s=10).threads_left == []


async def test_a_resumed_child_keeps_its_calls_under_its_delegate_call_and_its_receipt(
    saved: tuple[Gateway, EventLog], demo_server: DemoModelServer, tmp_path: Path
) -> None:
    # Resumed, a child's card had lost its own tool cards and its stop receipt, and sat
    # below its parent's reply instead of under the delegate call that started it.
    gw, log = saved
    (tmp_path / "sub").mkdir()
    session = gw.session_create()
    done = gw.prompt_submit(session, 'delegate: call tool list_dir with {"path": "sub"}')
    log.complete(done.turn_id, timeout=30)
    slow = gw.prompt_submit(session, 'delegate: call tool shell with {"command": "sleep 60"}')

    def child_shell_runs(_e: object) -> bool:
        return any(s.name == "shell" for s in log.of_type(ToolStart))

    assert log.wait_for(child_shell_runs, 30)
    child = next(c for c in log.of_type(ChildStarted) if c.parent_turn_id == slow.turn_id)
    gw.session_interrupt(
        session, StopRequest.by_user(Surface.DESK_BUTTON, "t"), turn_id=child.turn_id
    )
    log.complete(slow.turn_id, timeout=30)
    entries = gw.session_resume(session).transcript
    app = DeskApp(gw, connection(demo_server.base_url), handle_signals=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.controllers.sessions.show(session, entries)
        await pilot.pause()
        shown = [
            type(w).__name__
            for w in app.transcript.children
            if isinstance(w, UserPrompt | SavedToolCalls | AgentCard | SavedReply)
        ]
        assert shown[:4] == ["UserPrompt", "SavedToolCalls", "AgentCard", "SavedReply"]
        first, second = app.transcript.query(AgentCard).results(AgentCard)
        (listed,) = first.box.query_children(SavedToolCalls)
        assert listed.names == ("list_dir",)
        (ran,) = second.box.query_children(SavedToolCalls)
        assert ran.names == ("shell",)
        said = second.export_markdown()
        assert "sleep 60" in said and "stopped by you · " in said  # the receipt's figures


async def test_a_background_child_that_outlived_its_turn_adds_its_usage_to_the_total(
    gateway: tuple[Gateway, EventLog], demo_server: DemoModelServer, tmp_path: Path
) -> None:
    # The status bar's Σ stayed at the turn's end until the next turn, without the child's
    # requests (a resume counted them)
    gw, log = gateway
    app = desk(gw, demo_server)
    wait = json.dumps({"command": "until [ -e gate ]; do sleep 0.02; done"})
    async with app.run_test(size=(120, 40)) as pilot:
        await submit(pilot, f"delegate in background: call tool shell with {wait}")
        await wait_until(pilot, lambda: app.controllers.agents.cards, what="a child's card")
        (card,) = app.controllers.agents.cards
        await wait_until(pilot, lambda: log.of_type(MessageComplete), what="the turn's end")
        (ended,) = log.of_type(MessageComplete)
        assert card.running and ended.session_usage is not None  # the turn ended first
        (tmp_path / "gate").touch()  # the child goes on: its call ends, it replies
        await wait_until(pilot, lambda: not card.running, what="the child's end")
        total = gw.session_usage(app.session_id)
        await wait_until(pilot, lambda: app.status_bar.usage == total, what="the child counted")
        assert total.requests > ended.session_usage.requests


async def test_a_resumed_grandchild_sits_inside_its_parent_s_card(
    saved: tuple[Gateway, EventLog], demo_server: DemoModelServer
) -> None:
    # It was drawn after its parent's card, at an indent of its own, not inside it as live
    gw, log = saved
    session = gw.session_create()
    turn = gw.prompt_submit(session, "delegate: delegate: reply with exactly: deep").turn_id
    log.complete(turn, timeout=30)
    entries = gw.session_resume(session).transcript
    app = DeskApp(gw, connection(demo_server.base_url), handle_signals=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.controllers.sessions.show(session, entries)
        await pilot.pause()
        (child,) = app.transcript.query_children(AgentCard)
        (grandchild,) = child.box.query_children(AgentCard)
        assert grandchild.text == "deep" and grandchild.outcome == "completed"
        assert child.state_text().startswith("✓") and " · " in child.state_text()  # its time


def own_line(card: AgentCard, name: str) -> str:
    """What ``card``'s own line ``name`` (state, output, outcome) shows, not a nested card's."""
    holder = card.query_children(".summary").first() if name == "state" else card
    return drawn(holder.query_children(f".{name}").first())


async def test_a_stopped_tree_shows_each_child_s_own_receipt_in_its_own_card(
    gateway: tuple[Gateway, EventLog], demo_server: DemoModelServer
) -> None:
    # The middle child's outcome went to the first line of that kind in its card: its nested
    # child's (the receipt 'during delegate' under the child that streamed, its own lost)
    gw, log = gateway
    app = desk(gw, demo_server)
    async with app.run_test(size=(120, 50)) as pilot:
        await submit(pilot, "delegate: delegate: [demo tps=10] map the north")
        await wait_until(pilot, lambda: len(app.controllers.agents.cards) == 2, what="2 cards")
        outer, inner = app.controllers.agents.cards
        assert inner in outer.box.query(AgentCard)

        def wrote_words() -> bool:
            return len(inner.text.split()) >= 4

        await wait_until(pilot, wrote_words, what="the grandchild's live output")
        await pilot.press("escape")
        await wait_until(pilot, lambda: len(log.of_type(MessageComplete)) == 1, what="the stop")
        await wait_until(pilot, lambda: not outer.running and not inner.running, what="outcomes")
        outer_line, inner_line = own_line(outer, "outcome"), own_line(inner, "outcome")
        assert "stopped by you" in outer_line and "during delegate" in outer_line
        assert "stopped by you" in inner_line and "during delegate" not in inner_line
        shown = own_line(inner, "output").split()
        assert shown and set(shown) <= set(inner.text.split())  # its words, not its parent's
        assert "stopped by you" in own_line(outer, "state")
        assert "stopped by you" in own_line(inner, "state")
