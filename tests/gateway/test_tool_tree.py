"""A stop during a shell call ends every descendant of the command, even one in a new session.

Real round trips on loopback: the demo model asks for the ``shell`` call, the command starts a
``setsid`` child (a new session and process group, which a signal to the command's group does
not reach) and a plain background child, and the user stops the turn mid-call.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from agent.provider.client import ProviderConfig
from agent.stops import StopRequest, Surface
from agent.tools.process import has_procfs
from contract.events import ToolComplete, ToolOutput
from tests.support import EventLog
from tui_gateway.gateway import Gateway, GatewayConfig

pytestmark = pytest.mark.skipif(
    not (sys.platform.startswith("linux") and has_procfs()), reason="Linux /proc"
)

COMMAND = "setsid sleep 303 & echo pid=$!; echo pid=$$; sleep 304 & echo pid=$!; wait"


@pytest.fixture
def run(provider: ProviderConfig, tmp_path: Path) -> Iterator[tuple[Gateway, EventLog, str]]:
    gateway = Gateway(GatewayConfig(provider=provider, approvals=False, cwd=tmp_path))
    log = EventLog()
    gateway.subscribe(log)
    yield gateway, log, gateway.session_create()
    assert gateway.shutdown(timeout_s=5).threads_left == []


def running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_a_stop_ends_the_setsid_child_of_a_shell_call_and_counts_it(
    run: tuple[Gateway, EventLog, str],
) -> None:
    gateway, log, session = run
    prompt = "call tool shell with " + json.dumps({"command": COMMAND})
    turn = gateway.prompt_submit(session, prompt).turn_id

    def output() -> str:
        return "".join(o.text for o in log.of_type(ToolOutput))

    assert log.wait_for(lambda _: output().count("pid=") == 3)
    pids = [int(part.split()[0]) for part in output().split("pid=")[1:]]
    assert all(running(pid) for pid in pids)
    gateway.session_interrupt(session, StopRequest.by_user(Surface.DESK_KEY))
    done = log.complete(turn, timeout=15)
    assert done.exit_reason == "interrupted_by_user"
    (result,) = log.of_type(ToolComplete)
    assert result.stopped_by == "stopped by the user"
    # When the receipt is out, every descendant is gone: none was left to PID 1.
    assert [pid for pid in pids if running(pid)] == []
    assert done.stop is not None and done.stop.children_ended == 3
    assert result.children_ended == 3
