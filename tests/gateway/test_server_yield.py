"""A model server on this machine, in another session, yields the CPU to desk while it runs
(tui_gateway.servers.server_yield): its session's group nice is raised once it answers, and put
back when the gateway shuts down."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from agent.provider.client import ProviderConfig
from tests.support import poll_until
from tui_gateway.gateway import Gateway, GatewayConfig
from tui_gateway.servers.server_yield import (
    ServerYield,
    group_nice,
    listening_pid,
    local_port,
    runtime_dir,
)

AUTOGROUPS = Path("/proc/sys/kernel/sched_autogroup_enabled")


def autogroups_on() -> bool:
    try:
        return AUTOGROUPS.read_text().strip() == "1"
    except OSError:
        return False


needs_autogroups = pytest.mark.skipif(
    not autogroups_on(), reason="the kernel does not group sessions (autogroup off)"
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def demo_model(*, own_session: bool) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """The demo model in a child process (a server started from another terminal when
    ``own_session``), answering once this yields its process and URL; killed after."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "demo_model", "--port", str(port), "--tps", "400"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=own_session,
    )
    try:
        assert poll_until(lambda: listening_pid(port) == proc.pid, timeout=30.0)
        yield proc, f"http://127.0.0.1:{port}/v1"
    finally:
        proc.kill()
        proc.wait(timeout=10)


@pytest.fixture
def server_elsewhere() -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    with demo_model(own_session=True) as served:
        yield served


@needs_autogroups
def test_a_local_server_in_another_session_yields_while_the_gateway_runs(
    server_elsewhere: tuple[subprocess.Popen[bytes], str],
) -> None:
    proc, url = server_elsewhere
    assert group_nice(proc.pid) == 0
    gateway = Gateway(
        GatewayConfig(provider=ProviderConfig(base_url=url, model="demo"), server_nice=10)
    )
    try:
        gateway.server.check()
        assert poll_until(lambda: group_nice(proc.pid) == 10, timeout=30.0)
    finally:
        assert gateway.shutdown(timeout_s=10).threads_left == []
    assert group_nice(proc.pid) == 0  # put back as it was


@needs_autogroups
def test_a_server_in_desks_own_session_or_off_the_machine_is_left_alone() -> None:
    with demo_model(own_session=False) as (proc, url):
        yielding = ServerYield(10)
        ours = group_nice(os.getpid())  # None when this session is the kernel's root group
        assert yielding.follow(url) is None  # lowering its group would lower desk's
        assert group_nice(proc.pid) == ours
        assert yielding.follow("http://192.0.2.1:8080/v1") is None  # not this machine
        assert ServerYield(0).follow(url.replace("127.0.0.1", "localhost")) is None  # off


@needs_autogroups
def test_a_server_niced_more_already_is_not_raised_nor_put_back(
    server_elsewhere: tuple[subprocess.Popen[bytes], str],
) -> None:
    proc, url = server_elsewhere
    Path(f"/proc/{proc.pid}/autogroup").write_text("15")
    yielding = ServerYield(10)
    assert yielding.follow(url) is None
    yielding.restore()
    assert group_nice(proc.pid) == 15


def test_only_loopback_addresses_name_this_machine() -> None:
    assert local_port("http://127.0.0.1:8080/v1") == 8080
    assert local_port("http://localhost/v1") == 80
    assert local_port("http://[::1]:11434") == 11434
    assert local_port("https://api.example.com/v1") is None
    assert local_port("http://10.0.0.5:8080/v1") is None


def test_the_process_listening_on_a_port_is_found() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        assert listening_pid(int(s.getsockname()[1])) == os.getpid()
    assert listening_pid(free_port()) is None


HOLDER = """
import sys
from pathlib import Path
from tui_gateway.servers.server_yield import ServerYield
held = ServerYield(10, locks=Path(sys.argv[2])).follow(sys.argv[1])
print(held, flush=True)
sys.stdin.read()
"""


@contextmanager
def desk_holding(url: str, locks: Path) -> Iterator[subprocess.Popen[str]]:
    """Another desk process holding the server's group niced, until it is killed."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, url, str(locks)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() != "None"
        yield proc
    finally:
        proc.kill()
        proc.wait(timeout=10)


@needs_autogroups
def test_the_server_stays_niced_until_the_last_desk_using_it_ends(
    server_elsewhere: tuple[subprocess.Popen[bytes], str], tmp_path: Path
) -> None:
    proc, url = server_elsewhere
    first, second = ServerYield(10, locks=tmp_path), ServerYield(10, locks=tmp_path)
    assert first.follow(url) == proc.pid
    assert second.follow(url) == proc.pid  # niced already: held with the first
    first.restore()
    assert group_nice(proc.pid) == 10  # the second desk still runs
    second.restore()
    assert group_nice(proc.pid) == 0


@needs_autogroups
def test_a_desk_killed_while_holding_the_nice_does_not_confuse_the_next(
    server_elsewhere: tuple[subprocess.Popen[bytes], str], tmp_path: Path
) -> None:
    proc, url = server_elsewhere
    with desk_holding(url, tmp_path) as other:
        assert group_nice(proc.pid) == 10
        ours = ServerYield(10, locks=tmp_path)
        assert ours.follow(url) == proc.pid
        other.kill()  # SIGKILL: it puts nothing back, and its lock goes with it
        other.wait(timeout=10)
        ours.restore()
    assert group_nice(proc.pid) == 0  # the last desk alive put it back

    with desk_holding(url, tmp_path):  # killed the last: the group stays niced...
        pass
    assert group_nice(proc.pid) == 10
    later = ServerYield(10, locks=tmp_path)
    assert later.follow(url) == proc.pid  # ...and the next desk knows what it had before
    later.restore()
    assert group_nice(proc.pid) == 0


def test_the_lock_files_go_to_the_runtime_dir_else_a_folder_of_this_user_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    assert runtime_dir() == tmp_path
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    mine = runtime_dir()
    assert mine == tmp_path / f"desk-{os.getuid()}" and mine.stat().st_mode & 0o777 == 0o700
    mine.chmod(0o777)  # another user could have put files there
    with pytest.raises(PermissionError):
        runtime_dir()


@needs_autogroups
def test_a_server_left_alone_leaves_no_lock_file(
    server_elsewhere: tuple[subprocess.Popen[bytes], str], tmp_path: Path
) -> None:
    proc, url = server_elsewhere
    Path(f"/proc/{proc.pid}/autogroup").write_text("15")
    assert ServerYield(10, locks=tmp_path).follow(url) is None
    used = ServerYield(10, locks=tmp_path)
    Path(f"/proc/{proc.pid}/autogroup").write_text("0")
    assert used.follow(url) == proc.pid
    used.restore()
    assert [p.name for p in tmp_path.iterdir()] == ["desk-server-nice.lock"]  # the mutex only
