"""Owner strings tell a running process from a dead one (and from a reused pid), and the store
asks the liveness it is given, not ``/proc``."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from contextlib import closing

from agent.store import (
    LocalLiveness,
    OwnerLiveness,
    current_owner,
    owner_alive,
)
from tests.store.conftest import ScriptedLiveness, StoreFactory


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


def test_the_local_liveness_is_this_process_and_proc() -> None:
    local = LocalLiveness()
    assert isinstance(local, OwnerLiveness)
    assert local.owner == current_owner()
    assert local.is_alive(local.owner) and not local.is_alive("garbage")


def test_the_store_writes_and_asks_its_liveness(store_factory: StoreFactory) -> None:
    asked: list[str] = []

    def alive(owner: str) -> bool:
        asked.append(owner)
        return False

    with closing(store_factory(liveness=ScriptedLiveness("desk-a:1:1"))) as a:
        assert a.owner == "desk-a:1:1"
        a.sessions.create_session("s")
        a.turns.start_turn("t", "s", "running")
    with closing(store_factory(liveness=ScriptedLiveness("desk-b:2:2", alive))) as b:
        assert asked == ["desk-a:1:1"]
        turn = b.turns.get_turn("t")
        assert turn is not None and turn.owner == "desk-a:1:1" and not turn.is_open
