"""The ``shell`` tool's spare keeper: started before a call needs it, used by the call, and
ended with desk.

A spare is a keeper (:mod:`agent.guard`) started with ``--spare``, a child of this process, with
its guard and the process that waits for the command below it (:mod:`agent.tools.spares`).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from agent.provider.client import ProviderConfig
from agent.tools.process import has_procfs
from contract.events import ToolComplete
from tests.support import EventLog, poll_until
from tests.tools.shellkit import is_dead
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
