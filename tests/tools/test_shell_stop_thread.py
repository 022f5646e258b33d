"""A stop reaches a ``shell`` command's processes on the thread that stops: the turn's loop need
not run first.

A call made with the turn's scope (:attr:`agent.tools.ToolContext.stops`) is a member of it
while its command runs; a hard stop (the scope cancelled, as :meth:`agent.agent.Agent.interrupt`
does on the stopping thread) signals the command's tree at once (``ShellRun.interrupt``). The
tests hold the turn's loop in a blocking call (as a loop waiting for a core is held), stop, and
see the command's processes exit while the loop cannot run; let go, the cancel ends the call,
counting what was ended (the processes alive at the stop, not the keeper's own). The calls run
under a spare keeper (:class:`agent.tools.spares.SparePool`, as the gateway's do), whose guard
is known before the command is even handed over: the call is a member before its first output.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from agent.agent import Agent
from agent.events import AgentEvent, ToolOutput
from agent.provider.client import ChatClient, ProviderConfig
from agent.scope import InterruptScope
from agent.stops import StopRequest, Surface
from agent.tools import ShellRun, ShellTool, tree_end
from agent.tools.process import has_procfs
from agent.tools.registry import ToolRegistry
from agent.tools.spares import SparePool
from tests.support import poll_until
from tests.tools.shellkit import COOPERATIVE, Output, context, is_dead, run

pytestmark = pytest.mark.skipif(
    not (sys.platform.startswith("linux") and has_procfs() and tree_end.available()),
    reason="pidfds and /proc children files",
)

GRACE_S = 0.5

# The shell exits at once; its `sleep` and a second `sleep` run on: three processes were started,
# two are alive at the stop.
ONE_EXITED = "echo $$; sh -c 'echo $$'; sleep 30 & echo $!; wait"


def stop() -> StopRequest:
    return StopRequest.by_user(Surface.DESK_KEY)


@pytest.fixture
def spares() -> Iterator[SparePool]:
    pool = SparePool(GRACE_S)
    try:
        yield pool
    finally:
        assert pool.close() == 0


def held_loop_stop(
    command: str, count: int, cwd: Path, spares: SparePool
) -> tuple[list[int], bool, ShellRun]:
    """Run ``command`` with a scope; once it printed ``count`` pids, hold the loop, cancel the
    scope from another thread and wait there for the pids to exit; then cancel the call."""
    scope = InterruptScope("turn")

    async def scenario() -> tuple[list[int], bool, ShellRun]:
        output = Output()
        shell = ShellTool(grace_s=GRACE_S, spares=spares).start(
            {"command": command}, context(cwd, output, stops=scope)
        )
        task = asyncio.create_task(shell.run())
        pids = await output.pids(count)
        gone: list[bool] = []

        def stopper() -> None:
            scope.cancel(stop())
            gone.append(poll_until(lambda: all(is_dead(pid) for pid in pids), 10.0))

        thread = threading.Thread(target=stopper)
        thread.start()
        thread.join()  # the loop is held: nothing of the call runs meanwhile
        task.cancel()  # what the agent's loop does once let run
        with pytest.raises(asyncio.CancelledError):
            await task
        return pids, gone[0], shell

    return run(scenario())


def test_a_stop_ends_the_command_while_the_turn_s_loop_cannot_run(
    tmp_path: Path, spares: SparePool
) -> None:
    pids, gone, shell = held_loop_stop(COOPERATIVE, 2, tmp_path, spares)
    assert gone, f"{pids} still ran while the loop was held"
    [ending] = shell.endings
    assert ending.cause == "stop" and ending.signals == ("SIGTERM",)
    assert ending.survivors == 0
    assert shell.children_ended == 2 == shell.ledger.children_ended  # not the keeper's own
    # No spare was ready: the pool started one for the call, and reaps it (at its close at the
    # latest), the stopped call not waiting for it.
    assert shell.group is not None
    assert spares.close() == 0
    assert not psutil.pid_exists(shell.group)


def test_the_count_is_only_of_the_processes_alive_at_the_stop(
    tmp_path: Path, spares: SparePool
) -> None:
    pids, gone, shell = held_loop_stop(ONE_EXITED, 3, tmp_path, spares)
    assert gone
    assert shell.children_ended == 2  # the shell and the sleep; the inner sh had exited


def test_a_stop_after_the_call_ended_signals_nothing(tmp_path: Path) -> None:
    scope = InterruptScope("turn")
    result = run(ShellTool().run({"command": "echo done"}, context(tmp_path, stops=scope)))
    assert result.exit_code == 0
    assert scope.member_count == 0  # the call left the scope as it ended
    scope.cancel(stop())


class HoldAtPids:
    """A listener that holds the turn's loop once the command printed two pids."""

    def __init__(self) -> None:
        self.text = ""
        self.pids: list[int] = []
        self.reached = threading.Event()
        self.release = threading.Event()

    def __call__(self, event: AgentEvent) -> None:
        if not isinstance(event, ToolOutput) or self.reached.is_set():
            return
        self.text += event.text
        found = re.findall(r"^(\d+)$", self.text, re.M)
        if len(found) >= 2:
            self.pids = [int(pid) for pid in found[:2]]
            self.reached.set()
            assert self.release.wait(60), "the test never released the turn"


def test_an_agent_s_stop_ends_its_shell_command_before_its_loop_runs(
    provider: ProviderConfig, tmp_path: Path, spares: SparePool
) -> None:
    hold = HoldAtPids()
    agent = Agent(
        ChatClient(provider),
        listener=hold,
        tools=ToolRegistry([ShellTool(grace_s=GRACE_S, spares=spares)]),
        cwd=tmp_path,
        delta_interval_s=0,
    )
    prompt = "call tool shell with " + json.dumps({"command": COOPERATIVE})
    results = []
    thread = threading.Thread(target=lambda: results.append(agent.run_conversation([], prompt)))
    thread.start()
    try:
        assert hold.reached.wait(20), "the command printed no pids"
        agent.interrupt(stop())  # the turn's loop is held in the listener
        gone = poll_until(lambda: all(is_dead(pid) for pid in hold.pids), 10.0)
    finally:
        hold.release.set()
        thread.join(60)
    assert gone, f"{hold.pids} still ran while the turn's loop was held"
    [result] = results
    assert result.status == "interrupted"
    assert result.children_ended == 2


def test_a_command_the_stop_ended_before_its_cancel_came_is_stopped_not_an_exit(
    tmp_path: Path, spares: SparePool
) -> None:
    # The stop signals the tree on its own thread; the cancel of the turn's loop comes after.
    # When the loop sees the command exit (-15) first, the call is still a stopped one: booked
    # "stopped by you", never "exit -15".
    scope = InterruptScope("turn")

    async def scenario() -> tuple[asyncio.Task[object], ShellRun]:
        output = Output()
        shell = ShellTool(grace_s=GRACE_S, spares=spares).start(
            {"command": COOPERATIVE}, context(tmp_path, output, stops=scope)
        )
        task: asyncio.Task[object] = asyncio.create_task(shell.run())
        await output.pids(2)
        thread = threading.Thread(target=lambda: scope.cancel(stop()))
        thread.start()
        thread.join()
        done, _ = await asyncio.wait({task}, timeout=30)  # no cancel: the loop runs on
        assert done, "the call did not end after its command was signalled"
        return task, shell

    task, shell = run(scenario())
    assert task.cancelled()  # a stop, not a result carrying the signal's exit code
    assert shell.stopped
    assert shell.children_ended == 2
