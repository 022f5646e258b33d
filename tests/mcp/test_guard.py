"""The guard: the server runs as its child in its group, and the group ends when desk's side dies.

These run the guard by path without any MCP: ``sh`` stands in for a server, and a forked
"parent" that the test kills with SIGKILL stands in for desk.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from agent import guard
from tests.mcp.conftest import wait_exited

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")

GUARD = Path(guard.__file__).resolve()
"""The guard the MCP transport runs a stdio server under (``agent.mcp.transport.GUARD``; that
module is not imported here: it loads the MCP SDK)."""


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


def test_a_pipeline_whose_reader_stops_early_ends_quietly() -> None:
    """The command starts with the signals as a shell gives them (Python ignores SIGPIPE):
    ``yes`` ends by SIGPIPE when ``head`` has read its line, without an error."""
    done = run_guard("sh", "-c", "yes | head -n 1")
    assert done.returncode == 0 and done.stdout == b"y\n"
    assert b"Broken pipe" not in done.stderr, done.stderr


def test_a_command_that_cannot_run_says_so() -> None:
    done = run_guard("no-such-mcp-server-here")
    assert done.returncode == 127
    assert b"cannot run 'no-such-mcp-server-here'" in done.stderr


def test_children_the_server_leaves_behind_are_ended() -> None:
    done = run_guard("sh", "-c", "sleep 300 & echo $!")
    child = int(done.stdout)
    assert wait_exited({child}) == set()


def test_the_tree_ends_when_the_parent_is_killed() -> None:
    read_end, write_end = os.pipe()
    parent = os.fork()
    if parent == 0:  # the stand-in for desk: starts the keeper, says its pid, then waits
        os.close(read_end)
        try:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-S", str(GUARD), str(os.getpid()), "1", "--"]
                + ["sh", "-c", "trap '' TERM; setsid sleep 300 & echo $!; wait"],
                stdin=subprocess.DEVNULL,
                stdout=write_end,
                start_new_session=True,
            )
            os.write(write_end, f"keeper {proc.pid}\n".encode())
            signal.pause()
        finally:
            os._exit(1)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as lines:
        first, second = lines.readline().decode(), lines.readline().decode()
        keeper = int((first if first.startswith("keeper") else second).split()[1])
        members = {keeper} | set(guard.descendants(keeper))
        assert len(members) == 4  # keeper, guard, sh (ignoring SIGTERM), the setsid'd sleep
        os.kill(parent, signal.SIGKILL)
        os.waitpid(parent, 0)
        assert wait_exited(members) == set()


def start_tree() -> tuple[subprocess.Popen[bytes], int, set[int]]:
    """A keeper over ``sh`` that starts a setsid'd child ignoring SIGTERM; ``(keeper, guard,
    every process below the keeper)`` once the child runs."""
    proc = subprocess.Popen(
        [sys.executable, "-I", "-S", str(GUARD), str(os.getpid()), "0.3", "--"]
        + ["sh", "-c", "setsid sh -c 'trap \"\" TERM; exec sleep 300' & echo $!; wait"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    assert proc.stdout is not None
    child = int(proc.stdout.readline())
    below = set(guard.descendants(proc.pid))
    [guard_pid] = [pid for pid in below if os.getpgid(pid) == pid and pid != child]
    return proc, guard_pid, below | {child}


def test_a_killed_guard_leaves_nothing_behind() -> None:
    proc, guard_pid, below = start_tree()
    os.kill(guard_pid, signal.SIGKILL)  # what `kill -9 $PPID` in the server does
    assert wait_exited(below) == set()
    _, err = proc.communicate(timeout=30)
    assert f"{guard.EXIT_MARK}signal SIGKILL" in err.decode()


def test_a_killed_keeper_leaves_nothing_behind() -> None:
    proc, _, below = start_tree()
    proc.kill()  # the guard is told by the kernel and ends its own tree
    proc.wait()
    assert wait_exited(below) == set()
