"""``desk run`` killed with SIGKILL mid-tool leaves no process of the tool's tree behind.

SIGKILL runs no cleanup in desk: the tool's keeper, a child of desk that the kernel tells when
its parent dies, ends every descendant of its own (the guard, the command, a ``setsid`` one).
The test reads the tree's pids from a file the command writes, kills ``desk run``, and polls
``/proc`` with a generous deadline until none of them runs.
"""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import psutil
import pytest

from agent.provider.client import ProviderConfig
from agent.tools.process import has_procfs
from tests.support import poll_until
from tests.wire.kit import Child, wire_cmd

pytestmark = pytest.mark.skipif(
    not (sys.platform.startswith("linux") and has_procfs()), reason="Linux /proc"
)

DEADLINE_S = 30.0


def running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def poll(condition: object, what: str) -> None:
    """Poll ``condition()`` until it holds, failing after :data:`DEADLINE_S` seconds."""
    assert callable(condition)
    assert poll_until(condition, DEADLINE_S, every_s=0.05), f"gave up waiting: {what}"


def test_sigkill_of_desk_run_mid_tool_ends_the_tools_whole_tree(
    provider: ProviderConfig, tmp_path: Path, config_home: Path
) -> None:
    # The guard's own tree, seen from here: no sandbox, whose pid namespace would give the
    # command other pids than the host sees (the sandbox's stops have tests of their own).
    config = config_home / "desk" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('sandbox = "off"\n')
    pids_file = tmp_path / "pids"
    command = (
        f"echo $$ > {pids_file}.tmp; sleep 307 & echo $! >> {pids_file}.tmp; "
        f"setsid sleep 308 & echo $! >> {pids_file}.tmp; mv {pids_file}.tmp {pids_file}; wait"
    )
    prompt = "call tool shell with " + json.dumps({"command": command})
    desk = Child(wire_cmd("run", provider, "--yes", prompt))
    try:
        poll(pids_file.exists, "the command to write its pids")
        shell, *children = [int(line) for line in pids_file.read_text().split()]
        guard = psutil.Process(shell).ppid()
        keeper = psutil.Process(guard).ppid()
        tree = [keeper, guard, shell, *children]
        assert psutil.Process(keeper).ppid() == desk.proc.pid
        assert all(running(pid) for pid in tree)
        desk.proc.send_signal(signal.SIGKILL)
        assert desk.wait() == -signal.SIGKILL
        poll(lambda: not any(running(pid) for pid in tree), f"{tree} to end")
    finally:
        desk.kill()
