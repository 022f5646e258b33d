"""The shell tool ends the command's whole tree, not only its process group.

A process that leaves the group (``setsid``) is still a descendant of the tool's guard, and one
orphaned on the way (a subshell that exits) is adopted by the guard, a child subreaper: a stop,
a timeout and the command's own end all reach them, and they are counted in the receipt.
"""

from __future__ import annotations

import asyncio
import os
import select
import signal
import sys
from pathlib import Path

import pytest

from agent import guard
from agent.tools import ShellTool
from agent.tools.process import has_procfs
from tests.support import poll_until
from tests.tools.shellkit import Output, context, is_dead, run

pytestmark = pytest.mark.skipif(
    not (sys.platform.startswith("linux") and has_procfs()), reason="Linux /proc and subreaper"
)

SETSID_AND_WAIT = "setsid sleep 303 & echo pid=$!; echo pid=$$; sleep 304 & echo pid=$!; wait"


def pids_of(text: str) -> list[int]:
    return [int(part.split()[0]) for part in text.split("pid=")[1:]]


def test_a_stop_ends_a_descendant_that_left_the_group(tmp_path: Path) -> None:
    async def scenario() -> tuple[list[int], int]:
        output = Output()
        ctx = context(tmp_path, output)
        run_ = ShellTool(grace_s=0.5).start({"command": SETSID_AND_WAIT}, ctx)
        task = asyncio.create_task(run_.run())
        await output.wait_for(r"(pid=\d+\n.*){3}")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return pids_of(output.text), run_.children_ended

    pids, ended = run(scenario())
    assert all(is_dead(pid) for pid in pids), pids
    assert ended == 3  # the shell, `sleep 304` and the `setsid` one


@pytest.mark.parametrize(
    "command",
    ["setsid sleep 305 & echo pid=$!", "(setsid sleep 306 & echo pid=$!) ; echo done"],
    ids=["setsid-child", "orphaned-setsid-grandchild"],
)
def test_a_daemon_left_behind_is_ended_when_the_command_exits(command: str, tmp_path: Path) -> None:
    output = Output()
    ctx = context(tmp_path, output)
    result = run(ShellTool().run({"command": command}, ctx))
    [pid] = pids_of(output.text)
    assert is_dead(pid)
    assert result.exit_code == 0 and not result.is_error
    assert result.children_ended == 1
    assert "[ended 1 child process still running after the command exited]" in result.content


def test_a_command_that_kills_its_guard_has_its_whole_tree_ended_and_counted(
    tmp_path: Path,
) -> None:
    ready = tmp_path / "ready"
    command = (
        f"setsid sh -c 'trap \"\" TERM; echo $$ > {ready}; exec sleep 309' & "
        f"until [ -s {ready} ]; do sleep 0.01; done; echo pid=$(cat {ready}); echo pid=$$; "
        "kill -9 $PPID; exec sleep 310"
    )
    output = Output()
    result = run(ShellTool(grace_s=0.3).run({"command": command}, context(tmp_path, output)))
    pids = pids_of(output.text)
    assert len(pids) == 2 and all(is_dead(pid) for pid in pids), pids
    assert result.exit_code == -9 and result.is_error
    assert "[the command killed its guard: 2 child processes ended]" in result.content
    assert result.children_ended == 2


def test_a_storm_of_ending_signals_to_the_keeper_still_ends_the_tree(tmp_path: Path) -> None:
    # A keeper started by a thread other than the main one gets its parent-death SIGTERM twice
    # when desk is killed (once per exiting thread), and desk's own SIGTERM may come too: the
    # later ones arrive while the keeper is ending the tree.
    command = "setsid sh -c 'trap \"\" TERM; echo pid=$$; exec sleep 311' & wait"

    async def signalled() -> list[int]:
        output = Output()
        shell = ShellTool(grace_s=0.3).start({"command": command}, context(tmp_path, output))
        task = asyncio.create_task(shell.run())
        await output.wait_for("pid=")
        assert shell.group is not None
        keeper = os.pidfd_open(shell.group)  # never a recycled pid
        try:
            while not select.select([keeper], [], [], 0)[0]:
                signal.pidfd_send_signal(keeper, signal.SIGTERM)
                await asyncio.sleep(0.0002)  # spread over the keeper's ending, not a wait
        finally:
            os.close(keeper)
        await task
        return pids_of(output.text)

    pids = run(signalled())
    assert len(pids) == 1
    assert poll_until(lambda: is_dead(pids[0]), 10), "the tree outlived its keeper"


def test_the_keeper_leaves_its_wait_once_whatever_number_of_signals(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The second signal comes while the first one's ending runs: raised there, it would end the
    # keeper and leave the tree to the kernel's reaper.
    monkeypatch.setattr(guard, "_end_requested", False)
    with pytest.raises(guard._EndRequested):
        guard._on_signal(signal.SIGTERM, None)
    guard._on_signal(signal.SIGTERM, None)
    guard._on_signal(signal.SIGHUP, None)
