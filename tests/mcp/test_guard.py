"""The guard: the server runs as its child in its group, and the group ends when desk's side dies.

These run the guard by path without any MCP: ``sh`` stands in for a server, and a forked
"parent" that the test kills with SIGKILL stands in for desk.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from agent import guard
from agent.mcp.transport import GUARD
from tests.mcp.conftest import alive_in_group, wait_exited

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")


def run_guard(*command: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-I", "-S", str(GUARD), str(os.getpid()), "1", "--", *command],
        capture_output=True,
        start_new_session=True,
        timeout=30,
    )


def test_the_server_inherits_the_pipes_and_the_guard_reports_its_exit() -> None:
    done = run_guard("sh", "-c", "echo out; echo err >&2; exit 3")
    assert done.returncode == 3
    assert done.stdout == b"out\n"
    lines = done.stderr.decode().splitlines()
    assert lines[0].startswith(guard.GROUP_MARK)
    assert "err" in lines and lines[-1] == f"{guard.EXIT_MARK}3"


def test_a_command_that_cannot_run_says_so() -> None:
    done = run_guard("no-such-mcp-server-here")
    assert done.returncode == 127
    assert b"cannot run 'no-such-mcp-server-here'" in done.stderr


def test_children_the_server_leaves_behind_are_ended() -> None:
    done = run_guard("sh", "-c", "sleep 300 & echo $!")
    child = int(done.stdout)
    assert wait_exited({child}) == set()


def test_the_group_ends_when_the_parent_is_killed() -> None:
    read_end, write_end = os.pipe()
    parent = os.fork()
    if parent == 0:  # the stand-in for desk: starts the guard, says its pid, then waits
        os.close(read_end)
        try:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-S", str(GUARD), str(os.getpid()), "1", "--"]
                + ["sh", "-c", "trap '' TERM; sleep 300 & echo $!; wait"],
                stdin=subprocess.DEVNULL,
                stdout=write_end,
                start_new_session=True,
            )
            os.write(write_end, f"{proc.pid}\n".encode())
            signal.pause()
        finally:
            os._exit(1)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as lines:
        first, second = lines.readline(), lines.readline()
        pids = {int(first), int(second)}  # the sleeping child and the guard, in either order
        pgid = max(pid for pid in pids if os.getpgid(pid) == pid)
        members = alive_in_group(pgid)
        assert len(members) == 3  # guard, sh (ignoring SIGTERM), sleep
        os.kill(parent, signal.SIGKILL)
        os.waitpid(parent, 0)
        assert wait_exited(members) == set()
    assert alive_in_group(pgid) == set()
