"""Owner strings tell a running process from a dead one (and from a reused pid)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

from agent.store import current_owner, owner_alive


def test_this_process_is_alive() -> None:
    owner = current_owner()
    host, pid, _start = owner.split(":")
    assert host == socket.gethostname() and int(pid) == os.getpid()
    assert owner_alive(owner)


def test_a_reaped_child_is_dead_and_a_zombie_too() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    owner = f"{socket.gethostname()}:{child.pid}:-"
    try:
        assert owner_alive(owner)
        child.kill()
        # Not reaped yet: a zombie. /proc says so before wait() removes it.
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)
        assert not owner_alive(owner)
    finally:
        child.wait()
    assert not owner_alive(owner)


def test_a_reused_pid_is_not_the_owner() -> None:
    host, pid, start = current_owner().split(":")
    if start == "-":
        return  # no /proc here: start times are unknown
    assert not owner_alive(f"{host}:{pid}:{int(start) + 1}")


def test_other_hosts_and_garbage() -> None:
    assert owner_alive("some-other-host.invalid:1:1")  # cannot check: assume alive
    assert not owner_alive("")
    assert not owner_alive("garbage")
    assert not owner_alive(f"{socket.gethostname()}:0:-")
