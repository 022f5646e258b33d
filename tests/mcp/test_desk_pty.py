"""The real ``desk`` in a pseudo-terminal with MCP servers: a failed server's line is on screen,
and after Ctrl+Q, or kill -9 of desk, no process of a server is left (by process group)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.desk.test_pty_stop import desk_in_pty
from tests.mcp.conftest import alive_in_group, wait_exited
from tests.mcp.witness import Witness, server_command
from tests.support import running_demo

pytestmark = [
    pytest.mark.pty,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux pty and /proc"),
]


@pytest.fixture
def witness() -> Iterator[Witness]:
    found = Witness()
    try:
        yield found
    finally:
        found.close()


@pytest.mark.parametrize("how", ["ctrl+q", "kill -9"])
def test_no_server_process_outlives_desk(witness: Witness, tmp_path: Path, how: str) -> None:
    # --linger: the server does not go when its stdin ends, so after kill -9 only the guard can
    # end it (a server that does not go at quit: test_lifetime.py)
    linger = ("--linger",) if how == "kill -9" else ()
    command = server_command(witness, "--name", "pty", "--spawn-child", *linger)
    args = [
        "--mcp",
        "pty=" + subprocess.list2cmdline(command),
        "--mcp",
        "broken=desk-no-such-mcp-server",
    ]
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_DATA_HOME": str(tmp_path / "data")}
    with (
        running_demo(200) as server,
        desk_in_pty(server, env, cwd=tmp_path, extra_args=args) as (proc, screen),
    ):
        screen.wait_for(b"mcp: broken failed: exited with code 127", timeout_s=20.0)
        started = witness.wait_event("started", name="pty")
        witness.wait_event("spawned", pid=started["pid"])
        pgid = int(started["pgid"])
        members = alive_in_group(pgid)
        assert len(members) == 3  # the guard, the server, its child
        if how == "ctrl+q":
            screen.write(b"\x11")
            assert proc.wait(timeout=30.0) == 0
        else:
            os.kill(proc.pid, signal.SIGKILL)
            assert proc.wait(timeout=10.0) == -signal.SIGKILL
        assert wait_exited(members) == set(), f"left after {how}: {alive_in_group(pgid)}"
        assert alive_in_group(pgid) == set()
