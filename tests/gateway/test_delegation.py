"""Child agents through the gateway: the delegate tool's answers, and every stop reaching them.

The demo model scripts the parent's ``delegate`` calls (``delegate: TASK`` lines) and paces a
child with ``[demo tps=N]`` in its task, so a child streams slowly while its parent does not.
The server's own records say which connections it saw closed; psutil says which sockets and
processes are left.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from agent.agent import Agent
from agent.provider.client import ProviderConfig
from agent.stops import StopRequest, Surface
from agent.store import SqliteStore
from contract.events import (
    ApprovalRequest,
    ApprovalResolved,
    ChildCompleted,
    ChildStarted,
    GatewayStopping,
    MessageDelta,
    PromptSteered,
    ToolComplete,
    ToolOutput,
)
from demo_model.server import DemoModelServer
from tests.support import EventLog
from tui_gateway.engine_setup import AgentSetup
from tui_gateway.gateway import Gateway, GatewayConfig
from tui_gateway.turns.turn_runner import default_agent_factory

TWO_SLOW = (
    "delegate in background: map the north [demo tps=10]\ndelegate: map the south [demo tps=10]"
)


class Tree:
    """A gateway over a store, its event log, and waits on child agents' events."""

    def __init__(
        self,
        provider: ProviderConfig,
        tmp: Path,
        agent_factory: Callable[[AgentSetup], Agent] | None = None,
        **config: object,
    ) -> None:
        self.db = tmp / "desk.db"
        self.store = SqliteStore(self.db)
        settings: dict[str, object] = {"approvals": False, "cwd": tmp}
        settings.update(config)
        self.gateway = Gateway(
            GatewayConfig(provider=provider, **settings),  # type: ignore[arg-type]
            store=self.store,
            agent_factory=agent_factory,
        )
        self.log = EventLog()
        self.gateway.subscribe(self.log)
        self.session = self.gateway.session_create()

    def started(self, count: int, timeout: float = 10) -> list[ChildStarted]:
        assert self.log.wait_for(lambda _e: len(self.log.of_type(ChildStarted)) >= count, timeout)
        return self.log.of_type(ChildStarted)

    def ended(self, child_id: str, timeout: float = 15) -> ChildCompleted:
        def done(_e: object) -> bool:
            return any(c.turn_id == child_id for c in self.log.of_type(ChildCompleted))

        assert self.log.wait_for(done, timeout), f"child {child_id} never ended"
        return next(c for c in self.log.of_type(ChildCompleted) if c.turn_id == child_id)

    def streaming(self, *turn_ids: str) -> None:
        def all_stream(_e: object) -> bool:
            seen = {d.turn_id for d in self.log.of_type(MessageDelta)}
            return all(t in seen for t in turn_ids)

        assert self.log.wait_for(all_stream, 10)


@pytest.fixture
def tree(provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path) -> Iterator[Tree]:
    demo_server.configure(slots=4)
    t = Tree(provider, tmp_path)
    yield t
    assert t.gateway.shutdown(timeout_s=10).threads_left == []


def open_sockets_to(port: int) -> list[object]:
    """This process's TCP connections to the model server that are still open."""
    return [
        c
        for c in psutil.Process().net_connections(kind="tcp")
        if c.raddr and c.raddr.port == port and c.status == psutil.CONN_ESTABLISHED
    ]


def test_a_foreground_child_answers_as_the_tool_result_and_is_saved_under_its_parent(
    tree: Tree, demo_server: DemoModelServer
) -> None:
    turn = tree.gateway.prompt_submit(
        tree.session, "delegate: reply with exactly: the child's answer"
    ).turn_id
    complete = tree.log.complete(turn, timeout=15)
    assert complete.status == "completed"
    (child,) = tree.started(1)
    assert child.parent_turn_id == turn and not child.background and child.depth == 1
    ended = tree.ended(child.turn_id)
    assert ended.status == "completed" and ended.delivery == "tool_result"
    assert ended.text == "the child's answer"
    (result,) = [t for t in tree.log.of_type(ToolComplete) if t.turn_id == turn]
    assert result.content == "the child's answer" and not result.is_error
    child_request = next(
        r
        for r in demo_server.records.list()
        if r.messages[-1]["content"] == ("reply with exactly: the child's answer")
    )
    assert [m["role"] for m in child_request.messages] == ["system", "user"]  # its own transcript
    row = tree.store.turns.get_turn(child.turn_id)
    assert row is not None and row.parent_turn_id == turn
    assert row.exit_reason == "completed" and row.reply == "the child's answer"
    assert row.completion_tokens == ended.completion_tokens and row.completion_tokens
    saved = tree.store.transcript.all_messages(tree.session)
    assert all(m.turn_id != child.turn_id for m in saved)  # not the session's transcript
    resumed = tree.gateway.session_resume(tree.session).transcript
    (outcome,) = resumed[-1].children
    assert (outcome.turn_id, outcome.exit_reason, outcome.reply) == (
        child.turn_id,
        "completed",
        "the child's answer",
    )


def test_a_background_child_s_answer_steers_its_running_parent(tree: Tree) -> None:
    # The parent streams slowly ([demo tps]); the background child is quick.
    prompt = "[demo tps=15]\ndelegate in background: reply with exactly: found it"
    turn = tree.gateway.prompt_submit(tree.session, prompt).turn_id
    (child,) = tree.started(1)
    assert child.background
    complete = tree.log.complete(turn, timeout=30)
    assert complete.status == "completed"
    ended = tree.ended(child.turn_id)
    assert ended.delivery == "steer"
    (steered,) = tree.log.of_type(PromptSteered)
    assert steered.turn_id == turn and steered.steer_id == child.turn_id
    assert steered.issuer == "system" and steered.surface == "delegate.result"
    history = tree.gateway.history(tree.session)
    prompt_message, note = [m for m in history if m.role == "user"]
    assert prompt_message.content == prompt and "found it" in note.content
    assert "not typed by the person" in note.content  # never read as the person's words


def test_a_background_child_that_outlives_its_parent_stays_a_note(tree: Tree) -> None:
    turn = tree.gateway.prompt_submit(
        tree.session, "delegate in background: [demo delay=3] reply with exactly: late news"
    ).turn_id
    (child,) = tree.started(1)
    assert tree.log.complete(turn).status == "completed"
    ended = tree.ended(child.turn_id)
    assert ended.status == "completed" and ended.delivery == "note"
    assert ended.text == "late news"
    assert not tree.log.of_type(PromptSteered)
    row = tree.store.turns.get_turn(child.turn_id)
    assert row is not None and row.reply == "late news"  # the note survives a resume


def test_a_quit_says_it_waits_for_a_background_child_that_outlived_its_turn(tree: Tree) -> None:
    turn = tree.gateway.prompt_submit(
        tree.session, "delegate in background: [demo tps=5] map the north"
    ).turn_id
    (child,) = tree.started(1)
    assert tree.log.complete(turn).status == "completed"
    assert tree.gateway.running_turns == 0  # no turn of the session runs: only its child
    assert tree.gateway.shutdown(timeout_s=10).threads_left == []
    (stopping,) = tree.log.of_type(GatewayStopping)
    assert stopping.turns == 1  # what the quit waits for: the child's worker
    assert tree.ended(child.turn_id).exit_reason.startswith("interrupted_by_system")


@pytest.mark.parametrize("how", ["parent stop", "quit"])
def test_every_stop_of_the_parent_reaches_both_children_and_leaves_nothing(
    how: str, tree: Tree, demo_server: DemoModelServer
) -> None:
    turn = tree.gateway.prompt_submit(tree.session, TWO_SLOW).turn_id
    children = tree.started(2)
    tree.streaming(*(c.turn_id for c in children))
    if how == "parent stop":
        tree.gateway.session_interrupt(tree.session, StopRequest.by_user(Surface.DESK_KEY))
        want = "interrupted_by_user"
    else:
        assert tree.gateway.shutdown(timeout_s=10).threads_left == []
        want = "interrupted_by_system(gateway.shutdown)"
    complete = tree.log.complete(turn, timeout=10)
    assert complete.exit_reason == want
    for child in children:
        ended = tree.ended(child.turn_id, timeout=10)
        assert ended.exit_reason == want
        assert ended.stop is not None and ended.stop.surface == complete.stop.surface  # type: ignore[union-attr]
    # the server notices a close on its own loop: wait (bounded) until it has noticed both
    assert demo_server.records.wait_for(lambda recs: all(r.finished for r in recs), 5)
    records = demo_server.records.list()
    cut = [r for r in records if r.messages[0]["role"] == "system"]  # the children's requests
    assert len(cut) == 2
    for record in cut:
        assert record.peer_closed_at is not None and record.outcome == "client_closed"
    assert tree.gateway.worker_threads() == []
    assert open_sockets_to(demo_server.port) == []
    with SqliteStore(tree.db) as reopened:
        for child in children:
            row = reopened.turns.get_turn(child.turn_id)
            assert row is not None and row.parent_turn_id == turn and row.exit_reason == want


def test_stopping_one_child_alone_lets_its_parent_complete(tree: Tree) -> None:
    turn = tree.gateway.prompt_submit(tree.session, "delegate: map the south [demo tps=10]").turn_id
    (child,) = tree.started(1)
    tree.streaming(child.turn_id)
    stopped = tree.gateway.session_interrupt(
        tree.session, StopRequest.by_user(Surface.DESK_BUTTON), turn_id=child.turn_id
    )
    assert stopped == child.turn_id
    ended = tree.ended(child.turn_id)
    assert ended.exit_reason == "interrupted_by_user"
    complete = tree.log.complete(turn, timeout=15)
    assert complete.status == "completed" and complete.stop is None
    (result,) = [t for t in tree.log.of_type(ToolComplete) if t.turn_id == turn]
    assert result.content.startswith("the person stopped the child agent")
    assert "the person stopped the child agent" in complete.text  # the demo model quotes it


def test_a_child_the_system_stopped_is_not_said_to_be_stopped_by_the_person(tree: Tree) -> None:
    turn = tree.gateway.prompt_submit(tree.session, "delegate: map the south [demo tps=10]").turn_id
    (child,) = tree.started(1)
    tree.streaming(child.turn_id)
    stop = StopRequest.by_system(Surface.CONSOLE_TIMEOUT, "its command ran out of time")
    assert tree.gateway.session_interrupt(tree.session, stop, turn_id=child.turn_id)
    assert tree.ended(child.turn_id).exit_reason == "interrupted_by_system(console.timeout)"
    complete = tree.log.complete(turn, timeout=15)
    assert complete.status == "completed"
    (result,) = [t for t in tree.log.of_type(ToolComplete) if t.turn_id == turn]
    assert result.is_error
    assert result.content.startswith(
        "the system stopped the child agent: its command ran out of time"
    )
    assert "the person" not in result.content


def test_with_delegation_off_no_delegate_tool_is_offered(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    tree = Tree(provider, tmp_path, delegate_depth=0)
    try:
        turn = tree.gateway.prompt_submit(tree.session, "reply with exactly: alone").turn_id
        assert tree.log.complete(turn, timeout=15).status == "completed"
        (request,) = demo_server.records.list()
        offered = [t["function"]["name"] for t in request.request.get("tools", [])]
        assert offered and "delegate" not in offered  # the other tools are offered
    finally:
        assert tree.gateway.shutdown(timeout_s=10).threads_left == []


def test_a_child_beyond_the_limits_gets_a_clear_tool_error(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    demo_server.configure(slots=4)
    tree = Tree(provider, tmp_path, delegate_depth=1, delegate_width=1)
    try:
        nested = tree.gateway.prompt_submit(tree.session, "delegate: delegate: too deep").turn_id
        assert tree.log.complete(nested, timeout=15).status == "completed"
        (child,) = tree.started(1)
        deep = [t for t in tree.log.of_type(ToolComplete) if t.turn_id == child.turn_id]
        assert deep and deep[0].is_error and "delegate_depth" in deep[0].content
        wide = "delegate in background: a [demo tps=10]\ndelegate in background: b"
        parent = tree.gateway.prompt_submit(tree.session, wide).turn_id
        assert tree.log.complete(parent, timeout=15).status == "completed"
        results = [t for t in tree.log.of_type(ToolComplete) if t.turn_id == parent]
        assert not results[0].is_error
        assert results[1].is_error and "delegate_width" in results[1].content
    finally:
        assert tree.gateway.shutdown(timeout_s=10).threads_left == []


def test_a_child_that_starts_after_its_parent_was_stopped_is_stopped_on_entry(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    built = 0
    building = threading.Event()
    go_on = threading.Event()
    real = default_agent_factory(GatewayConfig(provider=provider))

    def factory(setup: AgentSetup) -> Agent:
        nonlocal built
        built += 1
        if built == 2:  # the child: hold its start until the parent is stopped
            building.set()
            assert go_on.wait(10)
        return real(setup)

    tree = Tree(provider, tmp_path, agent_factory=factory)
    session = tree.session
    try:
        turn = tree.gateway.prompt_submit(session, "delegate: never asked").turn_id
        assert building.wait(10)
        tree.gateway.session_interrupt(session, StopRequest.by_user(Surface.DESK_KEY))
        go_on.set()
        assert tree.log.complete(turn).exit_reason == "interrupted_by_user"
        (child,) = tree.started(1)
        assert tree.ended(child.turn_id).exit_reason == "interrupted_by_user"
        assert not any(r.messages[0]["role"] == "system" for r in demo_server.records.list())
    finally:
        assert tree.gateway.shutdown(timeout_s=10).threads_left == []


def test_a_parent_stop_denies_a_child_s_pending_approval_and_ends_its_tool_process(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    demo_server.configure(slots=4)
    tree = Tree(provider, tmp_path, approvals=True)
    try:
        prompt = 'delegate: call tool shell with {"command": "echo pid=$$; sleep 30"}'
        turn = tree.gateway.prompt_submit(tree.session, prompt).turn_id
        assert tree.log.wait_for(lambda _e: bool(tree.log.of_type(ApprovalRequest)), 10)
        (asked,) = tree.log.of_type(ApprovalRequest)
        (child,) = tree.started(1)
        assert asked.turn_id == child.turn_id
        tree.gateway.session_interrupt(tree.session, StopRequest.by_user(Surface.DESK_KEY))
        assert tree.log.complete(turn).exit_reason == "interrupted_by_user"
        (resolved,) = tree.log.of_type(ApprovalResolved)
        assert (resolved.decision, resolved.reason) == ("deny", "stopped by the user")
        assert tree.ended(child.turn_id).exit_reason == "interrupted_by_user"

        # the same with the approval given: the child's shell runs, the parent's stop ends it
        second = tree.gateway.prompt_submit(tree.session, prompt).turn_id
        assert tree.log.wait_for(lambda _e: len(tree.log.of_type(ApprovalRequest)) == 2, 10)
        again = tree.log.of_type(ApprovalRequest)[1]
        tree.gateway.approval_respond(tree.session, again.request_id, "once")
        assert tree.log.wait_for(
            lambda _e: any(o.turn_id == again.turn_id for o in tree.log.of_type(ToolOutput)), 10
        )
        out = next(o for o in tree.log.of_type(ToolOutput) if o.turn_id == again.turn_id)
        pid = int(out.text.split("pid=")[1].split()[0])
        tree.gateway.session_interrupt(tree.session, StopRequest.by_user(Surface.DESK_KEY))
        assert tree.log.complete(second).exit_reason == "interrupted_by_user"
        ended = tree.ended(again.turn_id)
        assert ended.stop is not None and ended.stop.children_ended >= 1
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    finally:
        assert tree.gateway.shutdown(timeout_s=10).threads_left == []


def test_the_console_lists_the_children_and_stops_one(tree: Tree) -> None:
    turn = tree.gateway.prompt_submit(tree.session, "delegate: map the west [demo tps=10]").turn_id
    (child,) = tree.started(1)
    (info,) = tree.gateway.session_agents(tree.session)
    assert info.turn_id == child.turn_id and info.running and info.task.startswith("map the west")
    command = tree.gateway.console_run(tree.session, f"/agents stop {child.turn_id[:6]}")
    assert tree.ended(child.turn_id).exit_reason == "interrupted_by_user"
    assert tree.log.complete(turn, timeout=15).status == "completed"
    row = tree.store.turns.get_turn(child.turn_id)
    assert row is not None and row.stop_surface == "console.stop"
    assert command


def test_an_eviction_stops_the_children_as_the_system(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    demo_server.configure(slots=4)
    tree = Tree(provider, tmp_path, max_sessions=1)
    try:
        turn = tree.gateway.prompt_submit(tree.session, TWO_SLOW).turn_id
        children = tree.started(2)
        tree.streaming(*(c.turn_id for c in children))
        tree.gateway.session_create()  # one session too many: the running one is evicted
        want = "interrupted_by_system(session.evicted)"
        assert tree.log.complete(turn).exit_reason == want
        for child in children:
            assert tree.ended(child.turn_id).exit_reason == want
        assert tree.gateway.worker_threads() == []
    finally:
        assert tree.gateway.shutdown(timeout_s=10).threads_left == []


@pytest.mark.parametrize("keyed", [False, True])
def test_a_stop_when_only_a_background_child_runs_stops_it_as_yours(
    keyed: bool, tree: Tree, demo_server: DemoModelServer
) -> None:
    turn = tree.gateway.prompt_submit(
        tree.session, "delegate in background: reply at length [demo tps=10]"
    ).turn_id
    (child,) = tree.started(1)
    assert tree.log.complete(turn).status == "completed"  # the parent ended; the child runs
    tree.streaming(child.turn_id)
    keyed_at = time.monotonic() if keyed else None
    stopped = tree.gateway.session_interrupt(
        tree.session, StopRequest.by_user(Surface.DESK_KEY), keyed_at=keyed_at
    )
    assert stopped == child.turn_id
    ended = tree.ended(child.turn_id, timeout=10)
    assert ended.exit_reason == "interrupted_by_user"
    assert ended.stop is not None and ended.stop.surface == Surface.DESK_KEY
    assert demo_server.records.wait_for(lambda recs: all(r.finished for r in recs), 5)
    (record,) = [r for r in demo_server.records.list() if r.messages[0]["role"] == "system"]
    assert record.peer_closed_at is not None and record.outcome == "client_closed"
    # nothing runs now: a second stop stops nothing
    assert (
        tree.gateway.session_interrupt(tree.session, StopRequest.by_user(Surface.DESK_KEY)) is None
    )


def test_a_childs_streamed_text_is_checkpointed_as_its_draft_while_it_runs(tree: Tree) -> None:
    # A kill -9 mid-child lost the child's whole reply: its text was never checkpointed (a
    # top-level turn's is, every moment); recovery now keeps the draft as the child's reply.
    turn = tree.gateway.prompt_submit(tree.session, "delegate: essay number 1 [demo tps=40]")
    (child,) = tree.started(1)

    def drafted(_event: object) -> bool:
        row = tree.store.turns.get_turn(child.turn_id)
        return row is not None and bool(row.draft)

    assert tree.log.wait_for(drafted, 15), "the child's text never reached its draft"
    tree.gateway.session_interrupt(tree.session, StopRequest.by_user(Surface.DESK_BUTTON))
    tree.log.complete(turn.turn_id, timeout=15)
    tree.ended(child.turn_id)
    row = tree.store.turns.get_turn(child.turn_id)
    assert row is not None and row.draft is None and row.reply
