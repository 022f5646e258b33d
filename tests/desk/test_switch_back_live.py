"""Switching to a session whose turn runs draws the turn as it stands, as if the person had never
left: the approval that waits (answerable, the status bar saying so), one asked while another
session was shown included; the reply so far, which then goes on streaming; a running shell
call's card with its command and the time it started; a background child agent that outlived
its turn, live (its text so far, its time, its Stop), under its delegate call, counted, drawn
once. Over a real gateway and the demo model, switched with the sessions sidebar's keys."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Button, Static

from agent.provider.client import ProviderConfig
from agent.store import SqliteStore
from contract.events import (
    ApprovalRequest,
    ChildCompleted,
    ChildStarted,
    MessageComplete,
    MessageStart,
    ToolComplete,
)
from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.widgets.agent_card import AgentCard
from desk.widgets.approval_prompt import ApprovalPrompt
from desk.widgets.assistant_reply import AssistantReply
from desk.widgets.saved_tool_calls import SavedToolCalls
from desk.widgets.tool_card import ToolCard
from desk.widgets.user_prompt import UserPrompt
from tests.desk.kit import answer_approval, click_until, connection, submit, wait_until
from tests.support import EventLog
from tui_gateway.gateway import Gateway, GatewayConfig

pytestmark = pytest.mark.anyio

WRITE = "call tool write_file with " + json.dumps({"path": "sw.txt", "content": "x\n"})
"""A prompt whose reply is a ``write_file`` call, which asks for approval."""


class FakeClock:
    """The desk's clock, moved by the test (seconds)."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def make_gateway(
    server: DemoModelServer, cwd: Path, *, approvals: bool, store: SqliteStore | None = None
) -> tuple[Gateway, EventLog]:
    provider = ProviderConfig(base_url=server.base_url, model="demo")
    config = GatewayConfig(provider=provider, cwd=cwd, approvals=approvals)
    gateway = Gateway(config, store=store)
    log = EventLog()
    gateway.subscribe(log)
    return gateway, log


@pytest.fixture
def approving(demo_server: DemoModelServer, tmp_path: Path) -> Iterator[tuple[Gateway, EventLog]]:
    gateway, log = make_gateway(demo_server, tmp_path, approvals=True)
    try:
        yield gateway, log
    finally:
        assert gateway.shutdown(timeout_s=5.0).threads_left == []


@pytest.fixture
def running_tools(
    demo_server: DemoModelServer, tmp_path: Path
) -> Iterator[tuple[Gateway, EventLog]]:
    gateway, log = make_gateway(demo_server, tmp_path, approvals=False)
    try:
        yield gateway, log
    finally:
        assert gateway.shutdown(timeout_s=5.0).threads_left == []


async def switch_to(app: DeskApp, pilot: Pilot[object], session_id: str) -> None:
    """Ctrl+B, the session's row, Enter: as the person switches sessions."""
    await pilot.press("ctrl+b")
    sidebar = app.widgets.sidebar

    def row() -> int | None:
        ids = [item.info.session_id for item in sidebar.items]
        return ids.index(session_id) if session_id in ids else None

    await wait_until(pilot, lambda: row() is not None, what="the session in the sidebar")
    await wait_until(pilot, lambda: sidebar.list_view.has_focus, what="the list focused")
    for _ in range(len(sidebar.items)):
        index, wanted = sidebar.list_view.index, row()
        if index == wanted:
            break
        await pilot.press("down" if index is None or index < (wanted or 0) else "up")
    assert sidebar.list_view.index == row()
    await pilot.press("enter")
    await wait_until(pilot, lambda: app.session_id == session_id, what="the switch")


def started(log: EventLog, session_id: str) -> str:
    """The turn that started last in ``session_id`` ("" before one did)."""
    turns = [
        e.payload.turn_id
        for e in list(log.events)
        if e.session_id == session_id and isinstance(e.payload, MessageStart)
    ]
    return turns[-1] if turns else ""


async def nothing_twice(pilot: Pilot[object], log: EventLog, turn: str, shown: str) -> None:
    """What the reply shows is what streamed, in order and nothing twice: the test's own
    subscriber gets the events on a thread of its own, so it may be behind the screen."""
    await wait_until(
        pilot,
        lambda: len(log.text_of(turn)) >= len(shown),
        what="the test's log up with the screen",
    )
    assert log.text_of(turn).startswith(shown)


def prompts_shown(app: DeskApp, text: str) -> int:
    """How many prompt blocks of the transcript read ``text``."""
    return sum(1 for p in app.transcript.query(UserPrompt).results(UserPrompt) if p.text == text)


def waiting_prompt(app: DeskApp) -> ApprovalPrompt | None:
    """The approval prompt on screen that waits for an answer, if any."""
    prompts = app.screen.query(ApprovalPrompt).results(ApprovalPrompt)
    return next((p for p in prompts if p.is_attached and p.waiting), None)


async def answer_with_shift_tab(app: DeskApp, pilot: Pilot[object]) -> ApprovalPrompt:
    """The waiting approval answered as the person does: Shift+Tab from the prompt box, y."""
    await wait_until(pilot, lambda: waiting_prompt(app), what="the approval card")
    await wait_until(
        pilot,
        lambda: "waiting for your approval" in app.status_bar.turn_text(),
        what="the status bar saying the turn waits for the person",
    )
    prompt = waiting_prompt(app)
    assert prompt is not None
    app.widgets.prompt.focus()
    await pilot.press("shift+tab")
    await wait_until(pilot, lambda: prompt.has_focus_within, what="Shift+Tab reaching the card")
    await answer_approval(pilot, prompt, "y")
    return prompt


async def test_an_approval_waiting_when_the_person_left_is_answerable_back_in_its_session(
    approving: tuple[Gateway, EventLog], demo_server: DemoModelServer, tmp_path: Path
) -> None:
    gateway, log = approving
    app = DeskApp(gateway, connection(demo_server.base_url), handle_signals=False)
    async with app.run_test(size=(120, 40)) as pilot:
        first = app.session_id
        await submit(pilot, WRITE)
        await wait_until(pilot, lambda: waiting_prompt(app), what="the approval card")
        await app.action_new_session()
        assert app.session_id != first and waiting_prompt(app) is None

        await switch_to(app, pilot, first)
        prompt = await answer_with_shift_tab(app, pilot)
        assert prompts_shown(app, WRITE) == 1  # its prompt once, above its card
        await wait_until(pilot, lambda: prompt.decision == "once", what="the answer taken")
        assert app.widgets.prompt.text == ""  # the y answered, it was not typed
        await wait_until(pilot, lambda: app.running_turn is None, what="the turn's end")
        assert (tmp_path / "sw.txt").read_text() == "x\n"
        assert app.status_bar.state == "idle"


async def test_an_approval_asked_while_another_session_is_shown_is_answerable_there(
    approving: tuple[Gateway, EventLog], demo_server: DemoModelServer, tmp_path: Path
) -> None:
    gateway, log = approving
    app = DeskApp(gateway, connection(demo_server.base_url), handle_signals=False)
    async with app.run_test(size=(120, 40)) as pilot:
        first = app.session_id
        await app.action_new_session()
        second = app.session_id
        # The demo model's one slot is taken by the second session's reply, so the first
        # session's request waits for it: its approval comes once that reply is stopped.
        await submit(pilot, "[demo tps=4] Tell me about slots")
        await wait_until(pilot, lambda: log.text_of(started(log, second)), what="streaming")
        await switch_to(app, pilot, first)
        await submit(pilot, WRITE)
        await wait_until(pilot, lambda: started(log, first), what="the first session's turn")
        await switch_to(app, pilot, second)
        await pilot.press("escape")  # frees the slot: the first session's call comes now
        assert log.wait_for(
            lambda events: any(
                e.session_id == first and isinstance(e.payload, ApprovalRequest) for e in events
            ),
            timeout=30.0,
        )
        assert app.session_id == second and waiting_prompt(app) is None

        await switch_to(app, pilot, first)
        prompt = await answer_with_shift_tab(app, pilot)
        await wait_until(pilot, lambda: prompt.decision == "once", what="the answer taken")
        await wait_until(pilot, lambda: app.running_turn is None, what="the turn's end")
        assert (tmp_path / "sw.txt").read_text() == "x\n"


@pytest.mark.parametrize("tokens_per_second", [12.0])  # the reply outlasts the test
async def test_back_in_a_streaming_session_the_reply_so_far_shows_and_goes_on_streaming(
    gateway: Gateway, demo_server: DemoModelServer
) -> None:
    log = EventLog()
    gateway.subscribe(log)
    app = DeskApp(gateway, connection(demo_server.base_url), handle_signals=False)
    async with app.run_test(size=(120, 40)) as pilot:
        first = app.session_id
        await submit(pilot, "Tell me about switching sessions")
        await wait_until(pilot, lambda: started(log, first), what="the turn's start")
        turn = started(log, first)
        await wait_until(pilot, lambda: app.transcript.reply(turn), what="the reply block")
        await wait_until(pilot, lambda: len(log.text_of(turn)) > 20, what="some text")
        await app.action_new_session()
        left_with = len(log.text_of(turn))
        await wait_until(
            pilot, lambda: len(log.text_of(turn)) > left_with + 40, what="text streamed meanwhile"
        )

        streamed = log.text_of(turn)  # what had streamed before the person came back
        await switch_to(app, pilot, first)

        def shown() -> AssistantReply | None:
            reply = app.transcript.reply(turn)
            return reply if reply is not None and reply.is_attached and reply.text else None

        await wait_until(pilot, shown, what="the reply drawn again")
        reply = shown()
        assert reply is not None
        assert gateway.running_turns == 1  # still streaming: not the completion's text
        assert reply.text.startswith(streamed)  # the reply so far, from its first word
        await nothing_twice(pilot, log, turn, reply.text)
        await wait_until(
            pilot, lambda: app.status_bar.state == "streaming", what="the status saying so"
        )
        drawn = len(reply.text)
        await wait_until(pilot, lambda: len(reply.text) > drawn + 20, what="the stream going on")
        await nothing_twice(pilot, log, turn, reply.text)

        await pilot.press("escape")
        await wait_until(pilot, lambda: gateway.running_turns == 0, what="the stop")


async def test_back_in_a_session_whose_shell_call_runs_its_card_has_its_command_and_time(
    running_tools: tuple[Gateway, EventLog], demo_server: DemoModelServer, tmp_path: Path
) -> None:
    gateway, log = running_tools
    clock = FakeClock(1000.0)
    app = DeskApp(gateway, connection(demo_server.base_url), handle_signals=False, clock=clock)
    command = "while [ ! -e go ]; do sleep 0.05; done; echo went"
    async with app.run_test(size=(120, 40)) as pilot:
        first = app.session_id
        await submit(pilot, "call tool shell with " + json.dumps({"command": command}))

        def card() -> ToolCard | None:
            cards = app.transcript.query(ToolCard).results(ToolCard)
            return next((c for c in cards if c.tool == "shell"), None)

        await wait_until(pilot, card, what="the shell card")
        clock.now = 1003.0
        await app.action_new_session()
        clock.now = 1005.0
        await switch_to(app, pilot, first)

        await wait_until(pilot, card, what="the shell card drawn again")
        shell = card()
        assert shell is not None and not shell.done
        title = str(shell.query_one(".title", Static).render())
        assert f"$ {command}" in title
        assert shell.state_text() == "running 5.0 s"  # from when it started, not from now
        await wait_until(
            pilot, lambda: app.status_bar.state == "tool", what="the status saying a tool runs"
        )

        clock.now = 1008.0
        (tmp_path / "go").touch()
        await wait_until(pilot, lambda: shell.done, what="the command's end")
        assert log.of_type(ToolComplete)[-1].exit_code == 0
        assert shell.state_text() == "✓ exit 0 · 8.0 s"
        assert f"$ {command}" in str(shell.query_one(".title", Static).render())
        await wait_until(pilot, lambda: app.running_turn is None, what="the turn's end")


@pytest.mark.parametrize("saved", [True, False], ids=["saved", "memory"])
async def test_back_in_a_session_a_background_child_that_outlived_its_turn_is_live(
    saved: bool, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    store = SqliteStore(tmp_path / "desk.db") if saved else None  # saved: its row says running
    gateway, log = make_gateway(demo_server, tmp_path, approvals=False, store=store)
    try:
        await background_child_drawn_live_again(gateway, log, demo_server)
    finally:
        assert gateway.shutdown(timeout_s=5.0).threads_left == []


async def background_child_drawn_live_again(
    gateway: Gateway, log: EventLog, demo_server: DemoModelServer
) -> None:
    demo_server.configure(slots=2)  # the parent's next request and its child's at once
    clock = FakeClock(1000.0)
    app = DeskApp(gateway, connection(demo_server.base_url), handle_signals=False, clock=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        first = app.session_id
        await submit(pilot, "delegate in background: [demo tps=10] map the north")
        await wait_until(pilot, lambda: log.of_type(ChildStarted), what="the child's start")
        (child,) = log.of_type(ChildStarted)
        await wait_until(pilot, lambda: log.of_type(MessageComplete), what="the parent's end")
        await wait_until(pilot, lambda: app.status_bar.agents == 1, what="'1 agent running'")
        clock.now = 1003.0
        await app.action_new_session()
        await wait_until(pilot, lambda: app.status_bar.agents == 0, what="the new session")
        left_with = len(log.text_of(child.turn_id))
        await wait_until(
            pilot,
            lambda: len(log.text_of(child.turn_id)) > left_with + 10,
            what="the child writing meanwhile",
        )
        streamed = log.text_of(child.turn_id)
        clock.now = 1005.0
        await switch_to(app, pilot, first)

        def card() -> AgentCard | None:
            return app.controllers.agents.card(child.turn_id)

        await wait_until(pilot, card, what="the child's card, live")
        live = card()
        assert live is not None and live.running
        cards = list(app.transcript.query(AgentCard).results(AgentCard))
        assert [c.turn_id for c in cards] == [child.turn_id]  # one card, not a saved one too
        assert not live.query_one(".stop", Button).disabled
        assert live.text.startswith(streamed)  # what it wrote so far, and nothing twice
        assert log.text_of(child.turn_id).startswith(live.text)
        assert live.state_text() == "running 5.0 s"  # from its real start
        calls = live.parent.children if live.parent is not None else []
        above = calls[calls.index(live) - 1]
        assert isinstance(above, SavedToolCalls) and above.names == ("delegate",)
        await wait_until(
            pilot, lambda: "1 agent running" in app.status_bar.turn_text(), what="counted"
        )
        assert app.check_action("stop", ())  # the stop key reaches it too

        await click_until(
            pilot, live.query_one(".stop", Button), lambda: log.of_type(ChildCompleted)
        )
        (ended,) = log.of_type(ChildCompleted)
        assert ended.exit_reason == "interrupted_by_user"
        await wait_until(pilot, lambda: not live.running, what="the card's outcome")
        assert live.state_text().startswith("■ stopped by you")
        await wait_until(pilot, lambda: app.status_bar.agents == 0, what="counted no more")
        assert "agent" not in app.status_bar.turn_text()


async def test_back_in_a_session_its_next_turn_and_its_earlier_background_child_both_run(
    demo_server: DemoModelServer, tmp_path: Path
) -> None:
    demo_server.configure(slots=3)
    store = SqliteStore(tmp_path / "desk.db")
    gateway, log = make_gateway(demo_server, tmp_path, approvals=False, store=store)
    try:
        app = DeskApp(gateway, connection(demo_server.base_url), handle_signals=False)
        async with app.run_test(size=(120, 40)) as pilot:
            first = app.session_id
            await submit(pilot, "delegate in background: [demo tps=10] map the north")
            await wait_until(pilot, lambda: log.of_type(MessageComplete), what="the turn's end")
            (child,) = log.of_type(ChildStarted)
            await submit(pilot, "[demo tps=10] Tell me about the south")
            await wait_until(pilot, lambda: len(log.of_type(MessageStart)) == 2, what="turn 2")
            turn = started(log, first)
            await wait_until(pilot, lambda: log.text_of(turn), what="its reply streaming")
            await app.action_new_session()
            await switch_to(app, pilot, first)

            await wait_until(
                pilot, lambda: app.controllers.agents.card(child.turn_id), what="the child's card"
            )
            await wait_until(pilot, lambda: app.transcript.reply(turn), what="the turn's reply")
            (card,) = app.transcript.query(AgentCard).results(AgentCard)
            assert card.turn_id == child.turn_id and card.running
            assert prompts_shown(app, "[demo tps=10] Tell me about the south") == 1
            reply = app.transcript.reply(turn)
            blocks = list(app.transcript.children)
            assert reply in blocks and blocks.index(card) < blocks.index(reply)
            assert app.running_turn == turn
            assert app.status_bar.state == "streaming"

            stop = card.query_one(".stop", Button)
            await click_until(pilot, stop, lambda: log.of_type(ChildCompleted))
            await wait_until(pilot, lambda: not card.running, what="its card's outcome")
            assert app.running_turn == turn  # the turn goes on
            await pilot.press("escape")
            await wait_until(pilot, lambda: app.running_turn is None, what="the turn's end")
    finally:
        assert gateway.shutdown(timeout_s=5.0).threads_left == []
