"""The ``shell`` tool's spare keeper: started before a call needs it, used by the call, and
ended with desk.

A spare is a keeper (:mod:`agent.guard`) started with ``--spare``, a child of this process, with
its guard and the process that waits for the command below it (:mod:`agent.tools.spares`).
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from agent.provider.client import ProviderConfig
from agent.stops import StopRequest, Surface
from agent.tools.process import has_procfs
from contract.events import ToolComplete, ToolOutput
from tests.support import EventLog, poll_until
from tests.tools.shellkit import COOPERATIVE, is_dead
from tui_gateway.gateway import Gateway, GatewayConfig

pytestmark = pytest.mark.skipif(
    not (sys.platform.startswith("linux") and has_procfs()), reason="Linux /proc and pidfds"
)


def spare_keepers() -> list[psutil.Process]:
    """This process's children that are spare keepers whose tree is ready (keeper, guard, the
    process waiting for the command)."""
    found = []
    for child in psutil.Process(os.getpid()).children():
        try:
            if "--spare" in child.cmdline() and len(child.children(recursive=True)) == 2:
                found.append(child)
        except psutil.NoSuchProcess:
            continue
    return found


@pytest.fixture
def gateway(provider: ProviderConfig, tmp_path: Path) -> Iterator[tuple[Gateway, EventLog, str]]:
    gateway = Gateway(GatewayConfig(provider=provider, approvals=False, cwd=tmp_path))
    log = EventLog()
    gateway.subscribe(log)
    try:
        yield gateway, log, gateway.session_create()
    finally:
        gateway.shutdown(timeout_s=10)


def first_turn(gateway: Gateway, log: EventLog, session: str) -> None:
    """One plain turn: its request offers the tools, which starts a spare."""
    log.complete(gateway.prompt_submit(session, "hello").turn_id, timeout=20)


def test_a_shell_call_runs_under_the_spare_started_before_it(
    gateway: tuple[Gateway, EventLog, str],
) -> None:
    desk, log, session = gateway
    first_turn(desk, log, session)
    assert poll_until(lambda: len(spare_keepers()) == 1, 30), "no spare keeper was started"
    spare = spare_keepers()[0].pid
    # The command's parent is the guard; the guard's parent is the keeper.
    command = "echo keeper=$(cut -d' ' -f4 /proc/$PPID/stat)"
    prompt = "call tool shell with " + json.dumps({"command": command})
    log.complete(desk.prompt_submit(session, prompt).turn_id, timeout=20)
    [done] = log.of_type(ToolComplete)
    assert f"keeper={spare}" in done.content
    assert poll_until(lambda: is_dead(spare), 10), "the used keeper did not exit"


def test_quitting_with_a_spare_started_leaves_no_process(
    provider: ProviderConfig, tmp_path: Path
) -> None:
    desk = Gateway(GatewayConfig(provider=provider, approvals=False, cwd=tmp_path))
    log = EventLog()
    desk.subscribe(log)
    try:
        first_turn(desk, log, desk.session_create())
        assert poll_until(lambda: len(spare_keepers()) == 1, 30), "no spare keeper was started"
        keeper = spare_keepers()[0]
        tree = [keeper.pid, *(p.pid for p in keeper.children(recursive=True))]
    finally:
        report = desk.shutdown(timeout_s=10)
    assert report.threads_left == []
    assert [pid for pid in tree if not is_dead(pid)] == []
    assert spare_keepers() == []


def test_a_stopped_call_leaves_its_keeper_to_be_reaped_by_the_shutdown_at_the_latest(
    provider: ProviderConfig, tmp_path: Path
) -> None:
    desk = Gateway(GatewayConfig(provider=provider, approvals=False, cwd=tmp_path))
    log = EventLog()
    desk.subscribe(log)
    try:
        session = desk.session_create()
        first_turn(desk, log, session)
        assert poll_until(lambda: len(spare_keepers()) == 1, 30), "no spare keeper was started"
        keeper = spare_keepers()[0].pid
        prompt = "call tool shell with " + json.dumps({"command": COOPERATIVE})
        turn_id = desk.prompt_submit(session, prompt).turn_id
        assert log.wait_for(lambda ev: len(re.findall(r"\d+\n", output(log))) >= 2, 20)
        pids = [int(pid) for pid in re.findall(r"(\d+)\n", output(log))]
        desk.session_interrupt(session, StopRequest.by_user(Surface.DESK_KEY), turn_id=turn_id)
        complete = log.complete(turn_id, timeout=20)
        # the command is gone when the turn's worker has returned, and counted
        assert [pid for pid in pids if not is_dead(pid)] == []
        assert complete.stop is not None and complete.stop.children_ended == 2
    finally:
        report = desk.shutdown(timeout_s=10)
    assert report.threads_left == []
    assert not psutil.pid_exists(keeper)  # exited by itself, and reaped


def output(log: EventLog) -> str:
    """The shell call's output so far."""
    return "".join(event.text for event in log.of_type(ToolOutput))
