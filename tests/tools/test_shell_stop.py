"""A hard stop (the awaiting task is cancelled) ends the command's whole process group.

The commands print the pids of every process of their group, so the test knows exactly which
processes must be gone. "Gone" is checked with psutil when the cancelled call returns: a pid is
either absent or a zombie (it exited; only its parent can still reap it: the command's shell
is reaped by asyncio, an orphaned grandchild by PID 1 or by a child subreaper). The strict
variant runs the same stop in a child interpreter that made itself a child subreaper
(:func:`agent.tools.become_subreaper`): there every pid must be absent.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from agent.tools import ShellRun, ShellTool
from agent.tools.process import has_procfs
from tests.tools.shellkit import COOPERATIVE, TERM_IGNORING, Output, context, is_dead, run

GRACE_S = 0.5

pytestmark = pytest.mark.skipif(not has_procfs(), reason="needs /proc to list a process group")


async def cancel_when_pids(
    command: str, count: int, cwd: Path, grace_s: float = GRACE_S
) -> tuple[list[int], float, ShellRun, Output]:
    """Start ``command``, wait until it printed ``count`` pids, cancel it; time the cancel."""
    output = Output()
    ctx = context(cwd, output)
    run_ = ShellTool(grace_s=grace_s).start({"command": command}, ctx)
    task = asyncio.create_task(run_.run())
    pids = await output.pids(count)
    started = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    return pids, time.monotonic() - started, run_, output


def test_a_stop_ends_a_cooperative_group_at_once(tmp_path: Path) -> None:
    pids, elapsed, run_, _ = run(cancel_when_pids(COOPERATIVE, 2, tmp_path))
    assert all(is_dead(pid) for pid in pids), pids
    assert run_.stopped and not run_.timed_out
    [ending] = run_.endings
    assert ending.signals == ("SIGTERM",)  # both die on SIGTERM: the grace was not needed
    assert ending.cause == "stop"
    assert run_.children_ended == 2 == run_.ledger.children_ended


def test_a_stop_ends_a_group_whose_grandchild_ignores_sigterm(tmp_path: Path) -> None:
    pids, elapsed, run_, _ = run(cancel_when_pids(TERM_IGNORING, 3, tmp_path))
    assert all(is_dead(pid) for pid in pids), pids
    assert elapsed >= GRACE_S  # the grace was given before SIGKILL
    [ending] = run_.endings
    assert ending.signals == ("SIGTERM", "SIGKILL")
    assert ending.survivors == 0
    assert run_.children_ended == 3


def test_the_default_grace_is_two_seconds() -> None:
    assert ShellTool().grace_s == 2.0


def test_a_second_cancel_during_the_grace_does_not_cut_the_cleanup_short(tmp_path: Path) -> None:
    # The inner shell handles SIGTERM: its handler forks a new `sleep` (a member born during
    # the grace, which only SIGKILL can catch), prints its pid, then "term".
    command = (
        'echo $$; sh -c \'trap "sleep 30 & echo \\$!; echo term" TERM; echo $$; '
        "sleep 30 & echo $!; wait; wait' & wait"
    )

    async def scenario() -> tuple[list[int], int, ShellRun]:
        output = Output()
        run_ = ShellTool(grace_s=3.0).start({"command": command}, context(tmp_path, output))
        task = asyncio.create_task(run_.run())
        pids = await output.pids(3)
        task.cancel()
        born_in_grace = await output.wait_for(r"(\d+)\nterm\n")  # SIGTERM was handled
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return pids, int(born_in_grace.group(1)), run_

    pids, born_in_grace, run_ = run(scenario())
    assert born_in_grace not in pids
    assert all(is_dead(pid) for pid in [*pids, born_in_grace])
    [ending] = run_.endings
    # The one born in the grace got its own SIGTERM. On a busy machine that SIGTERM can reach
    # it between its fork and its exec, where it still runs the trap (and forks again): then
    # only the SIGKILL after the whole grace ends it, which is the cleanup not cut short too.
    assert ending.signals in (("SIGTERM",), ("SIGTERM", "SIGKILL"))
    assert ending.ended >= 4


def test_a_cancel_before_the_call_starts_runs_nothing(tmp_path: Path) -> None:
    async def scenario() -> ShellRun:
        run_ = ShellTool().start({"command": "echo never"}, context(tmp_path))
        task = asyncio.create_task(run_.run())
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return run_

    run_ = run(scenario())
    assert run_.pid is None
    assert run_.ledger.endings == ()


def test_a_cancel_while_the_child_is_being_created_still_ends_it(tmp_path: Path) -> None:
    async def scenario() -> ShellRun:
        run_ = ShellTool(grace_s=GRACE_S).start({"command": TERM_IGNORING}, context(tmp_path))
        task = asyncio.create_task(run_.run())
        await asyncio.sleep(0)  # one loop turn: the task is now awaiting the spawn
        assert not task.done() and run_.pid is None
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return run_

    run_ = run(scenario())
    assert run_.pid is not None and run_.stopped
    assert is_dead(run_.pid)


def test_partial_output_is_kept_after_a_stop(tmp_path: Path) -> None:
    async def stop_after_partial() -> tuple[ShellRun, Output]:
        output = Output()
        run_ = ShellTool(grace_s=GRACE_S).start(
            {"command": "echo $$; echo partial; sleep 30"}, context(tmp_path, output)
        )
        task = asyncio.create_task(run_.run())
        await output.wait_for(r"partial\n")  # it has arrived before the stop is sent
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return run_, output

    run_, output = run(stop_after_partial())
    assert "partial" in run_.output.text()
    assert output.text == run_.output.text()


STRICT = textwrap.dedent(
    """
    import asyncio, json, sys, time
    from pathlib import Path

    import psutil

    from agent.tools import ShellTool, become_subreaper
    from tests.tools.shellkit import Output, context

    async def main(command: str, count: int) -> dict[str, object]:
        output = Output()
        run_ = ShellTool(grace_s=float(sys.argv[3])).start(
            {"command": command}, context(Path(sys.argv[4]), output)
        )
        task = asyncio.create_task(run_.run())
        pids = await output.pids(count)
        started = time.monotonic()
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        elapsed = time.monotonic() - started
        return {
            "pids": pids,
            "exist": [psutil.pid_exists(pid) for pid in pids],
            "elapsed_s": elapsed,
            "ended": run_.children_ended,
        }

    assert become_subreaper()
    print(json.dumps(asyncio.run(asyncio.wait_for(main(sys.argv[1], int(sys.argv[2])), 20))))
    """
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="child subreaper is Linux-only")
@pytest.mark.parametrize(("command", "count"), [(COOPERATIVE, 2), (TERM_IGNORING, 3)])
def test_with_a_subreaper_host_every_pid_of_the_group_is_gone(
    command: str, count: int, tmp_path: Path
) -> None:
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", STRICT, command, str(count), str(GRACE_S), str(tmp_path)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    figures = json.loads(done.stdout)
    assert figures["exist"] == [False] * count, figures
    assert figures["ended"] == count
