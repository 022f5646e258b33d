"""A child agent's file changes are its root turn's: one ``/undo`` of the turn the person typed
puts back what its children and grandchildren changed, and names that turn."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.provider.client import ProviderConfig
from demo_model.server import DemoModelServer
from tests.gateway.test_delegation import Tree


@pytest.fixture
def tree(provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path) -> Iterator[Tree]:
    demo_server.configure(slots=4)
    work = tmp_path / "work"
    work.mkdir()
    t = Tree(provider, tmp_path, cwd=work)
    yield t
    assert t.gateway.shutdown(timeout_s=10).threads_left == []


def test_one_undo_puts_back_what_a_grandchild_changed_and_names_the_typed_turn(
    tree: Tree,
) -> None:
    work = tree.gateway.config.cwd
    (work / "notes.txt").write_text("before\n")
    command = 'call tool shell with {"command": "echo after > notes.txt"}'
    prompt = f"delegate: delegate: {command}"
    turn = tree.gateway.prompt_submit(tree.session, prompt).turn_id
    assert tree.log.complete(turn, timeout=20).status == "completed"
    children = tree.started(2)
    assert sorted(c.depth for c in children) == [1, 2]  # a child, and its child
    assert (work / "notes.txt").read_text() == "after\n"
    undone = tree.gateway.session_undo(tree.session)
    assert (undone.undone, undone.turn_id, undone.prompt) == (True, turn, prompt)
    assert undone.restored == ["notes.txt"] and undone.remaining == 0
    assert (work / "notes.txt").read_text() == "before\n"
