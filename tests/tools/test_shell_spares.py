"""The ``shell`` tool under a spare keeper (:mod:`agent.tools.spares`): the call runs where and
with what it asked, a stop ends and counts its whole tree as under a keeper started for it, and
closing the pool ends the spare nobody used.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from agent.tools import ShellTool
from agent.tools.process import has_procfs
from agent.tools.spares import SparePool
from tests.support import poll_until
from tests.tools.shellkit import COOPERATIVE, TERM_IGNORING, Output, context, is_dead, run

GRACE_S = 0.5

pytestmark = pytest.mark.skipif(
    not (sys.platform.startswith("linux") and has_procfs()), reason="Linux /proc and pidfds"
)


@pytest.fixture
def spares() -> Iterator[SparePool]:
    pool = SparePool(GRACE_S)
    try:
        pool.warm()
        assert pool.wait_ready(30.0), "no spare keeper started"
        yield pool
    finally:
        assert pool.close() == 0


def test_the_command_runs_in_its_folder_with_its_environment_under_the_spare(
    spares: SparePool, tmp_path: Path
) -> None:
    [keeper] = spares.ready()
    tool = ShellTool(grace_s=GRACE_S, spares=spares, env={"DESK_TEST_WORD": "spare é"})
    command = 'echo "$DESK_TEST_WORD"; pwd; cut -d" " -f4 /proc/$PPID/stat'
    result = run(tool.run({"command": command}, context(tmp_path)))
    assert result.content.split("\n")[:3] == ["spare é", str(tmp_path), str(keeper)]
    assert result.exit_code == 0
    assert is_dead(keeper)


@pytest.mark.parametrize(
    ("command", "count", "signals"),
    [(COOPERATIVE, 2, ("SIGTERM",)), (TERM_IGNORING, 3, ("SIGTERM", "SIGKILL"))],
)
def test_a_stop_under_the_spare_ends_and_counts_the_whole_tree(
    command: str, count: int, signals: tuple[str, ...], spares: SparePool, tmp_path: Path
) -> None:
    [keeper] = spares.ready()

    async def stopped() -> tuple[list[int], int]:
        output = Output()
        shell = ShellTool(grace_s=GRACE_S, spares=spares).start(
            {"command": command}, context(tmp_path, output)
        )
        task = asyncio.create_task(shell.run())
        pids = await output.pids(count)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        [ending] = shell.endings
        assert ending.signals == signals
        assert ending.pgid == keeper
        return pids, shell.ledger.children_ended

    pids, ended = run(stopped())
    assert [pid for pid in pids if not is_dead(pid)] == []
    assert ended == count
    # The keeper and the guard exit by themselves, having nothing left; the stopped call does
    # not wait for that: its pool reaps the keeper, at the latest when it is closed.
    assert poll_until(lambda: is_dead(keeper), 10.0), "the keeper did not exit"
    assert spares.close() == 0
    assert not psutil.pid_exists(keeper)


def test_a_spare_asked_for_later_waits_unless_a_call_asks_for_one_now() -> None:
    pool = SparePool(GRACE_S)
    try:
        pool.warm(delay_s=3600.0)  # as after a stopped call, but much later
        assert not pool.wait_ready(0.5)
        pool.warm()  # a turn about to call the tool: the earlier ask wins
        assert pool.wait_ready(30.0), "no spare keeper started"
    finally:
        assert pool.close() == 0


def test_closing_the_pool_ends_the_unused_spare_and_its_tree(tmp_path: Path) -> None:
    pool = SparePool(GRACE_S)
    pool.warm()
    assert pool.wait_ready(30.0)
    [keeper] = pool.ready()
    tree = [keeper, *(p.pid for p in psutil.Process(keeper).children(recursive=True))]
    assert len(tree) == 3  # keeper, guard, the process waiting for the command
    assert pool.close() == 0
    assert [pid for pid in tree if not is_dead(pid)] == []
    assert pool.take() is None  # closed: a call starts its own keeper
