"""A stopped turn's ``message.complete`` comes after every child agent it started has ended:
a background child, and a grandchild under a foreground child (a depth-2 tree). Each of them
runs a command that ignores SIGTERM, so it takes the shell's grace (2 s) to end: a parent that
did not wait for its tree would say it stopped while its tree still runs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.provider.client import ProviderConfig
from agent.stops import StopRequest, Surface
from agent.store import SqliteStore
from contract.events import ChildCompleted, MessageComplete, ToolOutput
from demo_model.server import DemoModelServer
from tests.gateway.test_delegation import Tree

STUBBORN = 'call tool shell with {"command": "trap \'\' TERM; echo started; sleep 30"}'


@pytest.fixture
def tree(provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path) -> Iterator[Tree]:
    demo_server.configure(slots=4)
    t = Tree(provider, tmp_path)
    yield t
    assert t.gateway.shutdown(timeout_s=10).threads_left == []


@pytest.mark.parametrize("shape", ["background child", "grandchild"])
def test_the_parent_says_stopped_only_once_its_whole_tree_has_ended(shape: str, tree: Tree) -> None:
    if shape == "background child":  # the parent waits on a slow foreground one meanwhile
        prompt = f"delegate in background: {STUBBORN}\ndelegate: map the south [demo tps=10]"
    else:
        prompt = f"delegate: delegate: {STUBBORN}"
    turn = tree.gateway.prompt_submit(tree.session, prompt).turn_id
    children = tree.started(2)
    ids = {c.turn_id for c in children}
    assert tree.log.wait_for(
        lambda _e: any(o.turn_id in ids for o in tree.log.of_type(ToolOutput)), 20
    ), "the command never started"
    tree.gateway.session_interrupt(tree.session, StopRequest.by_user(Surface.DESK_KEY))
    complete = tree.log.complete(turn, timeout=20)
    assert complete.exit_reason == "interrupted_by_user"
    events = [e.payload for e in tree.log.events]
    at = next(
        i for i, p in enumerate(events) if isinstance(p, MessageComplete) and p.turn_id == turn
    )
    ended_before = {p.turn_id for p in events[:at] if isinstance(p, ChildCompleted)}
    assert ended_before == {c.turn_id for c in children}, "the parent ended before its tree"
    with SqliteStore(tree.db) as reopened:
        for child in children:
            row = reopened.turns.get_turn(child.turn_id)
            assert row is not None and row.exit_reason == "interrupted_by_user"
