"""A model server on this machine yields the CPU to desk's keys while desk runs.

Linux groups the processes of each session (each terminal, each ``setsid``) and shares the CPU
between the groups first (autogroup scheduling, on by default): a ``llama-server`` started in
another terminal computes on every core in its group, and desk's group, however little it asks
for, waited for a core for seconds. Measured on a 2-core machine (``bench/esc_latency.py
--base-url``, 24 presses, load 5): Esc -> the server saw the close p99 667 ms with both groups
at nice 0, 5.8 ms with the server's group at nice 10; desk's threads had been runnable,
not running, for up to 3 s before the key was read. The same server started in desk's own
session, or a process niced on its own, does not show it: across groups only the group's nice
counts.

So when the configured server listens on a loopback port of a process of this user in another
session, :class:`ServerYield` sets that session's group nice (``/proc/PID/autogroup``) to the
``server_nice`` setting while desk runs, and puts the value it found back when desk's gateway
shuts down (raising a group's nice, and lowering it back to where it was as long as that is
not below 0, needs no privilege). The model still gets every core desk does not use. A desk
killed with SIGKILL leaves the server's group niced until the server restarts.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from pathlib import Path
from urllib.parse import urlsplit

log = logging.getLogger(__name__)

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})
"""Host names of a server on this machine."""

_LISTEN = "0A"
"""The state column of a listening socket in ``/proc/net/tcp``."""


def listening_inodes(port: int, proc: Path = Path("/proc")) -> set[str]:
    """The socket inodes listening on TCP ``port`` (IPv4 and IPv6; none when unreadable)."""
    found: set[str] = set()
    for table in ("net/tcp", "net/tcp6"):
        with contextlib.suppress(OSError):
            for line in (proc / table).read_text().splitlines()[1:]:
                fields = line.split()
                listening = len(fields) > 9 and fields[3] == _LISTEN
                if listening and int(fields[1].rsplit(":", 1)[1], 16) == port:
                    found.add(fields[9])
    return found


def listening_pid(port: int, proc: Path = Path("/proc")) -> int | None:
    """The process listening on TCP ``port`` among those this user may read, or None."""
    inodes = {f"socket:[{inode}]" for inode in listening_inodes(port, proc)}
    if not inodes:
        return None
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            for fd in (entry / "fd").iterdir():
                with contextlib.suppress(OSError):
                    if os.readlink(fd) in inodes:
                        return int(entry.name)
    return None


def local_port(base_url: str) -> int | None:
    """The port of ``base_url`` when its host is this machine's loopback, else None."""
    parts = urlsplit(base_url)
    if (parts.hostname or "") not in LOOPBACK_HOSTS:
        return None
    try:
        return parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return None


def group_nice(pid: int, proc: Path = Path("/proc")) -> int | None:
    """The nice of ``pid``'s autogroup (``/autogroup-N nice V``), or None when unreadable."""
    try:
        words = (proc / str(pid) / "autogroup").read_text().split()
    except OSError:
        return None
    return int(words[-1]) if len(words) == 3 and words[1] == "nice" else None


def set_group_nice(pid: int, nice: int, proc: Path = Path("/proc")) -> bool:
    """Set ``pid``'s autogroup nice; False when the kernel or the permissions refuse."""
    try:
        (proc / str(pid) / "autogroup").write_text(str(nice))
    except OSError:
        return False
    return group_nice(pid, proc) == nice


class ServerYield:
    """Lowers a local model server's CPU share while desk runs (see the module). Thread-safe.

    Args:
        nice: the group nice to give the server (1-19); 0 leaves every server alone.
        proc: where ``/proc`` is (tests).
    """

    def __init__(self, nice: int, proc: Path = Path("/proc")) -> None:
        self._nice = max(0, min(19, nice))
        self._proc = proc
        self._lock = threading.Lock()
        self._changed: dict[int, int] = {}  # pid -> the group nice it had
        self._closed = False

    def follow(self, base_url: str) -> int | None:
        """The server at ``base_url`` answered: lower its group's nice if it is a process of
        this user on this machine, in another session, and not lower already.

        Returns:
            the pid whose group was changed, or None.
        """
        port = local_port(base_url)
        if not self._nice or port is None or not _autogroups(self._proc):
            return None
        pid = listening_pid(port, self._proc)
        if pid is None or pid == os.getpid():
            return None
        try:
            if os.getsid(pid) == os.getsid(0):
                return None  # our own session's group: lowering it would lower desk too
        except OSError:
            return None
        with self._lock:
            if self._closed or pid in self._changed:
                return None
            before = group_nice(pid, self._proc)
            if (
                before is None
                or before >= self._nice
                or not set_group_nice(pid, self._nice, self._proc)
            ):
                return None
            self._changed[pid] = before
        log.info(
            "model server (pid %d) yields the CPU: its group's nice %d -> %d",
            pid,
            before,
            self._nice,
        )
        return pid

    def restore(self) -> None:
        """Put back every group nice this changed (once; later :meth:`follow` calls do
        nothing)."""
        with self._lock:
            self._closed = True
            changed, self._changed = self._changed, {}
        for pid, before in changed.items():
            if group_nice(pid, self._proc) == self._nice:  # nobody changed it since
                set_group_nice(pid, max(0, before), self._proc)


def _autogroups(proc: Path) -> bool:
    try:
        return (proc / "sys/kernel/sched_autogroup_enabled").read_text().strip() == "1"
    except OSError:
        return False
