"""Owner strings tell a running process from a dead one (and from a reused pid), and the store
asks the liveness it is given, not ``/proc``."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import uuid
from contextlib import closing
from pathlib import Path

from agent.store import (
    LocalLiveness,
    OwnerLiveness,
    current_owner,
    owner_alive,
)
from agent.store.liveness import boot_id, pid_namespace
from tests.store.conftest import ScriptedLiveness, StoreFactory


def test_this_process_is_alive() -> None:
    owner = current_owner()
    host, pid, start, boot, namespace = owner.split(":")
    assert host == socket.gethostname() and int(pid) == os.getpid()
    assert (boot, namespace) == (boot_id(), pid_namespace())
    assert owner_alive(owner)
    assert owner_alive(current_owner("another-host"))  # the host is a label, nothing more


def test_a_reaped_child_is_dead_and_a_zombie_too() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    owner = f"{socket.gethostname()}:{child.pid}:-"
    new_owner = f"elsewhere:{child.pid}:-:{boot_id()}:{pid_namespace()}"
    try:
        assert owner_alive(owner) and owner_alive(new_owner)
        child.kill()
        # Not reaped yet: a zombie. /proc says so before wait() removes it.
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)
        assert not owner_alive(owner) and not owner_alive(new_owner)
    finally:
        child.wait()
    assert not owner_alive(owner) and not owner_alive(new_owner)


def test_a_reused_pid_is_not_the_owner() -> None:
    host, pid, start, boot, namespace = current_owner().split(":")
    if start == "-":
        return  # no /proc here: start times are unknown
    assert not owner_alive(f"{host}:{pid}:{int(start) + 1}")
    assert not owner_alive(f"{host}:{pid}:{int(start) + 1}:{boot}:{namespace}")


def test_an_owner_of_an_earlier_boot_is_gone_whatever_its_pid() -> None:
    host, pid, start, boot, namespace = current_owner().split(":")
    if boot == "-":
        return  # no boot id here
    assert not owner_alive(f"{host}:{pid}:{start}:{uuid.uuid4()}:{namespace}")


def test_other_hosts_and_garbage() -> None:
    assert owner_alive("some-other-host.invalid:1:1")  # an older desk's: cannot check, alive
    assert not owner_alive("")
    assert not owner_alive("garbage")
    assert not owner_alive(f"{socket.gethostname()}:0:-")
    assert not owner_alive("a:b:c:d:e") and not owner_alive("a:1:2:3")


LIFE_LOCK_HOLDER = """
import sys
from pathlib import Path
from agent.store.liveness import hold_life_lock
assert hold_life_lock(Path(sys.argv[1]))
print("held", flush=True)
sys.stdin.read()
"""


def test_an_owner_in_another_pid_namespace_is_alive_while_its_life_lock_is_held(
    tmp_path: Path,
) -> None:
    """A sibling container on the same volume: its pid means nothing here, its lock does."""
    locks = tmp_path / "desk.db-owners"
    child = subprocess.Popen(
        [sys.executable, "-c", LIFE_LOCK_HOLDER, str(locks)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "held\n"
        (lock,) = locks.iterdir()
        boot, namespace, pid, start = _parts(lock.name)
        assert pid == str(child.pid)
        elsewhere = f"another-container:{pid}:{start}:{boot}:1{namespace}"  # another pid ns
        assert owner_alive(elsewhere, locks)
        (tmp_path / "renamed").mkdir()
        other = tmp_path / "renamed" / f"{boot}-1{namespace}-{pid}-{start}"
        lock.rename(other)  # the same lock, now under the name the other namespace has
        assert owner_alive(elsewhere, tmp_path / "renamed")
        child.kill()
        child.wait(10)
        assert not owner_alive(elsewhere, tmp_path / "renamed")  # the kernel let go
        assert owner_alive(elsewhere, tmp_path / "nowhere")  # no lock to ask: cannot tell
        assert owner_alive(elsewhere)  # no lock folder at all: cannot tell
    finally:
        if child.poll() is None:
            child.kill()
        child.wait(10)


def test_the_life_locks_of_runs_that_ended_here_are_swept_and_others_kept(
    tmp_path: Path,
) -> None:
    """One file per run piled up: a desk that takes its life lock removes those of ended runs
    of this pid namespace; a live run's, and another namespace's, stay."""
    locks = tmp_path / "desk.db-owners"
    boot, namespace = boot_id(), pid_namespace()
    if "-" in (boot, namespace):
        return  # no boot id or namespace here: nothing is swept
    locks.mkdir()
    ended = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    gone = locks / f"{boot}-{namespace}-{ended.stdout.strip()}-1"
    alive = locks / f"{boot}-{namespace}-{os.getpid()}-{_own_start()}"
    elsewhere = locks / f"{boot}-1{namespace}-{ended.stdout.strip()}-1"
    for path in (gone, alive, elsewhere):
        path.touch()
    holder = subprocess.Popen(
        [sys.executable, "-c", LIFE_LOCK_HOLDER, str(locks)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        names = {path.name for path in locks.iterdir()}
        assert gone.name not in names
        assert {alive.name, elsewhere.name} <= names
        assert any(_parts(name)[2] == str(holder.pid) for name in names)  # its own
    finally:
        holder.communicate("")


def _own_start() -> str:
    """This process's start time in clock ticks (``/proc/self/stat`` field 22)."""
    stat = Path("/proc/self/stat").read_text()
    return stat.rsplit(")", 1)[1].split()[19]


def _parts(name: str) -> tuple[str, str, str, str]:
    """``boot-pidns-pid-start`` (the boot id has dashes of its own)."""
    rest, start = name.rsplit("-", 1)
    rest, pid = rest.rsplit("-", 1)
    boot, namespace = rest.rsplit("-", 1)
    return boot, namespace, pid, start


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
