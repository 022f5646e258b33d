"""Pilot tests of tool cards and approval prompts, over a real gateway and demo model server.

The demo model asks for a tool when the prompt says ``call tool NAME with {json}``; the shell
runs for real in ``tmp_path``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.provider.client import ProviderConfig
from contract.events import MessageComplete, MessageDelta, MessageStart, ToolComplete, ToolStart
from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.approval_keys import ANSWER_PAUSE_S
from desk.messages import GatewayMessage
from desk.widgets import AssistantReply
from desk.widgets.approval_prompt import ApprovalPrompt
from desk.widgets.tool_card import ToolCard
from tests.desk.kit import answer_approval, connection, submit, wait_until
from tui_gateway.gateway import Gateway, GatewayConfig

pytestmark = pytest.mark.anyio


def tool_prompt(command: str) -> str:
    return "call tool shell with " + json.dumps({"command": command})


@pytest.fixture
def approvals() -> bool:
    return True


@pytest.fixture
def tool_gateway(
    demo_server: DemoModelServer, tmp_path: Path, approvals: bool
) -> Iterator[Gateway]:
    provider = ProviderConfig(base_url=demo_server.base_url, model="demo")
    gateway = Gateway(GatewayConfig(provider=provider, cwd=tmp_path, approvals=approvals))
    try:
        yield gateway
    finally:
        assert gateway.shutdown(timeout_s=5.0).threads_left == []


@pytest.fixture
def app(tool_gateway: Gateway, demo_server: DemoModelServer) -> DeskApp:
    return DeskApp(tool_gateway, connection(demo_server.base_url), handle_signals=False)


async def approval_prompt(app: DeskApp, pilot: object) -> ApprovalPrompt:
    """Wait until an approval prompt waits for an answer and its own keys are armed (it never
    takes the focus: the prompt box keeps it). An earlier call's prompt, answered or stopped,
    may still be on screen: not that."""

    def shown() -> ApprovalPrompt | None:
        # One query, no ``first()``: under load the prompt may go between two queries.
        prompts = app.screen.query(ApprovalPrompt).results(ApprovalPrompt)
        return next((p for p in prompts if p.waiting), None)

    await wait_until(pilot, shown, timeout_s=30.0, what="the approval prompt")  # type: ignore[arg-type]
    prompt = shown()
    assert prompt is not None
    assert app.focused is app.query_one("#prompt")  # the prompt box kept the focus
    ready = prompt.shown_at + ANSWER_PAUSE_S + 0.05
    await wait_until(pilot, lambda: time.monotonic() > ready, what="the pause")  # type: ignore[arg-type]
    return prompt


def only_card(app: DeskApp) -> ToolCard:
    cards = app.controllers.tools.cards
    assert len(cards) == 1, cards
    return cards[0]


async def test_an_approved_shell_call_shows_its_card_output_and_exit_code(app: DeskApp) -> None:
    async with app.run_test(size=(120, 40)) as pilot:
        await submit(pilot, tool_prompt("echo hi"))
        prompt = await approval_prompt(app, pilot)
        card = only_card(app)
        assert prompt.tool == "shell"
        assert card.state_text() == "waiting for approval"
        assert card.query_one(".title").render().plain.endswith("⚙ shell  $ echo hi")  # type: ignore[attr-defined]

        await answer_approval(pilot, prompt, "y")
        await wait_until(pilot, lambda: card.done, what="the tool result")
        assert card.result is not None and card.result.exit_code == 0
        assert card.output == "hi\n"
        assert card.state_text().startswith("✓ exit 0 · ")
        assert prompt.decision == "once" and "allowed once" in str(
            prompt.query_one(".resolution").render()
        )
        assert not card.expanded  # folded to its summary line once done

        await wait_until(pilot, lambda: app.running_turn is None, what="the turn's end")
        reply = app.transcript.query(AssistantReply).last()
        assert reply.outcome == "completed" and "hi" in reply.text
        children = list(app.transcript.children)
        assert children.index(card) < children.index(reply)  # the reply reads below the card
        assert app.focused is app.query_one("#prompt")  # the focus went back to the prompt box

        card.focus()
        await pilot.press("enter")
        assert card.expanded and card.has_class("-expanded")


async def test_esc_while_an_approval_waits_stops_the_turn_and_denies(
    app: DeskApp, tool_gateway: Gateway
) -> None:
    async with app.run_test(size=(120, 40)) as pilot:
        await submit(pilot, tool_prompt("echo never"))
        prompt = await approval_prompt(app, pilot)
        turn_id = app.running_turn
        assert turn_id is not None
        await pilot.press("escape")
        await wait_until(pilot, lambda: prompt.decision is not None, what="the resolution")
        card = only_card(app)
        await wait_until(pilot, lambda: card.done, what="the tool result")
        await wait_until(pilot, lambda: app.running_turn is None, what="the turn's end")

        assert prompt.decision == "deny"
        assert "denied: stopped by you" in str(prompt.query_one(".resolution").render())
        assert card.result is not None and card.result.stopped_by == "stopped by the user"
        assert card.state_text().startswith("■ stopped by you")
        assert card.output == ""  # it never ran
        turn = tool_gateway.turn(app.session_id, turn_id)
        assert turn.result is not None and turn.result.exit_reason == "interrupted_by_user"
        reply = app.transcript.query(AssistantReply).last()
        assert reply.outcome == "interrupted" and reply.note.startswith("■ stopped by you")


async def test_deny_with_n(app: DeskApp) -> None:
    async with app.run_test(size=(120, 40)) as pilot:
        await submit(pilot, tool_prompt("echo no"))
        prompt = await approval_prompt(app, pilot)
        await answer_approval(pilot, prompt, "n")
        await wait_until(
            pilot, lambda: app.controllers.tools.cards, timeout_s=30.0, what="the card"
        )
        card = only_card(app)
        await wait_until(pilot, lambda: card.done, timeout_s=30.0, what="the tool result")
        assert card.result is not None and card.result.is_error
        assert card.state_text().startswith("✖ the person declined")
        assert prompt.decision == "deny"


@pytest.mark.parametrize("approvals", [False])
async def test_a_running_tool_streams_its_tail_and_a_stop_names_you(
    app: DeskApp, tool_gateway: Gateway
) -> None:
    async with app.run_test(size=(120, 40)) as pilot:
        await submit(pilot, tool_prompt("echo started; sleep 30"))
        await wait_until(pilot, lambda: app.controllers.tools.cards, what="the card")
        card = only_card(app)
        await wait_until(pilot, lambda: card.output == "started\n", what="live output")
        assert card.state_text().startswith("running ")
        assert card.has_class("-running") and card.has_class("-has-output")
        assert app.status_bar.state == "tool"

        await pilot.press("escape")
        await wait_until(pilot, lambda: card.done, what="the tool result")
        result = card.result
        assert isinstance(result, ToolComplete)
        assert result.stopped_by == "stopped by the user" and result.children_ended >= 1
        assert card.state_text().startswith("■ stopped by you · ")
        assert "child process" in card.state_text()
        await wait_until(pilot, lambda: app.running_turn is None, what="the turn's end")


async def test_text_before_a_tool_call_stays_above_its_card_and_the_rest_goes_below(
    app: DeskApp,
) -> None:
    # Scripted events (the demo model never writes text before a tool call).
    async with app.run_test(size=(120, 40)) as pilot:
        sid, turn = app.session_id, "t1"
        events = [
            GatewayMessage(sid, 1, MessageStart(turn_id=turn, prompt="look")),
            GatewayMessage(sid, 2, MessageDelta(turn_id=turn, text="Let me look.")),
            GatewayMessage(sid, 3, ToolStart(turn, "c1", "list_dir", '{"path": "."}')),
            GatewayMessage(sid, 4, ToolComplete("c1", "list_dir", "a.txt", False, turn_id=turn)),
            GatewayMessage(sid, 5, MessageDelta(turn_id=turn, text="There is a.txt.")),
            GatewayMessage(
                sid, 6, MessageComplete(turn, "completed", "completed", "There is a.txt.")
            ),
        ]
        for event in events:
            app.view.post_message(event)
        await wait_until(
            pilot, lambda: (r := app.transcript.reply(turn)) and r.outcome, what="the outcome"
        )
        kinds = [
            (type(w).__name__, getattr(w, "text", None))
            for w in app.transcript.children
            if isinstance(w, AssistantReply | ToolCard)
        ]
        assert kinds == [
            ("AssistantReply", "Let me look."),
            ("ToolCard", None),
            ("AssistantReply", "There is a.txt."),
        ]
        card = only_card(app)
        assert card.state_text().startswith("✓ done")
        assert card.query_one(".title").render().plain.endswith("⚙ list_dir  .")  # type: ignore[attr-defined]


async def stop_a_child(app: DeskApp, pilot: object, prompt: str, count: int) -> None:
    """Send ``prompt`` (which starts the ``count``-th child agent), wait for its call's
    approval prompt, then stop the turn with Esc and wait until the child shows its end."""
    await submit(pilot, prompt)  # type: ignore[arg-type]
    cards = app.controllers.agents
    await wait_until(pilot, lambda: len(cards.cards) == count, what="the child")  # type: ignore[arg-type]
    child = cards.cards[-1]
    await approval_prompt(app, pilot)  # the child's shell call asks
    await pilot.press("escape")  # type: ignore[attr-defined]
    await wait_until(pilot, lambda: not child.running, what="the child's end")  # type: ignore[arg-type]
    await wait_until(pilot, lambda: app.running_turn is None, what="the turn's end")  # type: ignore[arg-type]


async def test_child_agents_making_the_same_call_each_get_a_card_and_each_ends_on_a_stop(
    app: DeskApp, demo_server: DemoModelServer
) -> None:
    # The demo model derives a call's id from the request, as some servers do: the two child
    # agents' shell calls (same task, same request) share one id, in two different turns.
    demo_server.configure(slots=3)
    async with app.run_test(size=(120, 40)) as pilot:
        for count in (1, 2):
            await stop_a_child(app, pilot, "delegate: " + tool_prompt("sleep 30"), count)
        cards = app.controllers.tools.cards
        shells = [c for c in cards if c.tool == "shell"]
        assert len(shells) == 2 and shells[0].call_id == shells[1].call_id
        for child in app.controllers.agents.cards:  # each child's call in its own card
            (mine,) = child.box.query_children(ToolCard)
            assert mine.turn_id == child.turn_id
        for card in cards:  # every card ended: none keeps ticking "running N s"
            assert card.done, card.state_text()
        for card in shells:  # (a delegate card may end first on its child's answer)
            assert card.state_text().startswith("■ stopped by you")


async def test_a_child_s_last_words_sit_under_its_tool_cards(app: DeskApp) -> None:
    # The child calls list_dir, then writes about what it found: that text read above the
    # list_dir card, as if written before the call.
    async with app.run_test(size=(120, 40)) as pilot:
        await submit(pilot, 'delegate: call tool list_dir with {"path": "."}')
        agents = app.controllers.agents
        await wait_until(pilot, lambda: len(agents.cards) == 1, what="the child")
        child = agents.cards[0]
        await wait_until(pilot, lambda: not child.running, what="the child's end")
        await wait_until(pilot, lambda: app.running_turn is None, what="the turn's end")
        await pilot.pause()
        (call,) = child.box.query_children(ToolCard)
        said = child.query_one(".output")
        assert "list_dir" in child.text and said.display
        assert call.region.bottom <= said.region.y


async def test_a_call_whose_turn_failed_under_it_stops_ticking(app: DeskApp) -> None:
    # Scripted events: the turn failed while the call ran, with no tool.complete for it (the
    # card said "running 12.2 s" and counted on; /export wrote "still running").
    async with app.run_test(size=(120, 40)) as pilot:
        sid, turn = app.session_id, "t1"
        events = [
            GatewayMessage(sid, 1, MessageStart(turn_id=turn, prompt="look")),
            GatewayMessage(sid, 2, ToolStart(turn, "c1", "read_file", '{"path": "x"}')),
            GatewayMessage(
                sid,
                3,
                MessageComplete(
                    turn, "failed", "failed(RuntimeError)", "", error="internal error: boom"
                ),
            ),
        ]
        for event in events:
            app.view.post_message(event)
        cards = app.controllers.tools
        await wait_until(pilot, lambda: app.transcript.reply(turn) is not None, what="the turn")
        await wait_until(pilot, lambda: bool(cards.cards), what="its card")
        await wait_until(pilot, lambda: app.running_turn is None, what="the turn's end")
        card = only_card(app)
        assert card.done and not card.state_text().startswith("running")
        assert card.result is not None and "internal error: boom" in card.result.content
