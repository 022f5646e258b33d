"""A stop ends the command's tree from desk itself: the keeper and the guard need not run.

On busy cores a process that must be let run before the tree is ended (the keeper, asked by
SIGTERM) is what made a stop slow; desk now walks and signals the tree itself and waits for the
kernel's word (pidfds) that each process exited. The keeper and the guard are frozen (SIGSTOP)
before the stop here: the command's processes must still go, ended by desk alone, and be
counted; let go, the two exit by themselves and the call returns. Without desk's own walk
(:func:`agent.tools.tree_end.available` false) the keeper is asked, as before.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import psutil
import pytest

from agent.tools import ShellRun, ShellTool, tree_end
from agent.tools.process import has_procfs
from agent.tools.spares import SparePool
from tests.support import poll_until
from tests.tools.shellkit import COOPERATIVE, TERM_IGNORING, Output, context, is_dead, run

pytestmark = pytest.mark.skipif(
    not (sys.platform.startswith("linux") and has_procfs() and tree_end.available()),
    reason="pidfds and /proc children files",
)

GRACE_S = 0.3


async def stop_with_keeper_frozen(
    command: str, count: int, cwd: Path, spares: SparePool | None = None
) -> tuple[list[int], bool, ShellRun]:
    """Start ``command`` (under a spare keeper from ``spares``, if given), freeze its keeper
    and guard, stop the call; whether every pid it printed went while the two were frozen."""
    output = Output()
    tool = ShellTool(grace_s=GRACE_S, spares=spares)
    run_ = tool.start({"command": command}, context(cwd, output))
    task = asyncio.create_task(run_.run())
    pids = await output.pids(count)
    keeper = run_.group
    assert keeper is not None
    guard = psutil.Process(pids[0]).ppid()  # the shell is the guard's child
    frozen = [keeper, guard]
    for pid in frozen:
        os.kill(pid, signal.SIGSTOP)
    try:
        # A stop signal takes effect when the kernel next handles the process: on a busy
        # machine a moment later. Frozen means seen stopped.
        assert poll_until(lambda: all(stopped(pid) for pid in frozen), 10.0)
        task.cancel()
        gone = await asyncio.to_thread(poll_until, lambda: all(is_dead(p) for p in pids), 10.0)
        assert stopped(keeper)  # it did not run
    finally:
        for pid in frozen:
            os.kill(pid, signal.SIGCONT)
    with pytest.raises(asyncio.CancelledError):
        await task
    return pids, gone, run_


def stopped(pid: int) -> bool:
    """True once ``pid`` is stopped by a signal."""
    return psutil.Process(pid).status() == psutil.STATUS_STOPPED


@pytest.mark.parametrize(
    ("command", "count", "signals"),
    [(COOPERATIVE, 2, ("SIGTERM",)), (TERM_IGNORING, 3, ("SIGTERM", "SIGKILL"))],
    ids=["cooperative", "term-ignoring"],
)
def test_a_stop_ends_the_tree_while_the_keeper_and_the_guard_cannot_run(
    command: str, count: int, signals: tuple[str, ...], tmp_path: Path
) -> None:
    pids, gone, run_ = run(stop_with_keeper_frozen(command, count, tmp_path))
    assert gone, f"{pids} still ran while the keeper and the guard were frozen"
    assert run_.group is not None and not psutil.pid_exists(run_.group)  # reaped
    [ending] = run_.endings
    assert ending.cause == "stop" and ending.signals == signals
    assert ending.survivors == 0
    assert run_.children_ended == count == run_.ledger.children_ended  # not the guard


def test_under_a_spare_keeper_too_desk_ends_the_tree_itself(tmp_path: Path) -> None:
    pool = SparePool(GRACE_S)
    try:
        pool.warm()
        assert pool.wait_ready(30.0), "no spare keeper started"
        [keeper] = pool.ready()
        pids, gone, run_ = run(stop_with_keeper_frozen(COOPERATIVE, 2, tmp_path, pool))
    finally:
        assert pool.close() == 0
    assert run_.group == keeper  # the call ran under the spare
    assert gone, f"{pids} still ran while the keeper and the guard were frozen"
    assert run_.children_ended == 2


def test_without_desk_s_own_walk_the_keeper_ends_the_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tree_end, "available", lambda: False)

    async def scenario() -> tuple[list[int], ShellRun]:
        output = Output()
        run_ = ShellTool(grace_s=GRACE_S).start({"command": COOPERATIVE}, context(tmp_path, output))
        task = asyncio.create_task(run_.run())
        pids = await output.pids(2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return pids, run_

    pids, run_ = run(scenario())
    assert all(is_dead(pid) for pid in pids)
    [ending] = run_.endings
    assert ending.signals == ("SIGTERM",) and run_.children_ended == 2
