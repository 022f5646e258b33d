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
not below 0, needs no privilege). The model still gets every core desk does not use.

Several desks may share one server: each holds a shared ``flock`` on a file named by the
server's pid and start time (in ``$XDG_RUNTIME_DIR``, else this user's ``desk-UID`` folder in
the temporary directory), which
also keeps the nice the group had before the first of them. A desk that ends puts the nice
back only when it can then take that lock exclusively: it was the last one. A desk killed
with SIGKILL lets go of its lock with its process, so the next desk to end still puts the
nice back; a group left niced by a killed last desk is put back by the next desk that uses
the same server and ends.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import tempfile
import threading
from dataclasses import dataclass
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


def runtime_dir() -> Path:
    """Where the holders' lock files go: ``$XDG_RUNTIME_DIR``, else ``desk-UID`` (this user's
    alone, mode 0700) in the temporary directory.

    Raises:
        OSError: that folder cannot be made, or is not this user's alone.
    """
    found = os.environ.get("XDG_RUNTIME_DIR", "")
    if found and Path(found).is_dir():
        return Path(found)
    folder = Path(tempfile.gettempdir()) / f"desk-{os.getuid()}"
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700)
    info = folder.lstat()
    if not folder.is_dir() or folder.is_symlink() or info.st_uid != os.getuid():
        raise PermissionError(f"{folder} is not this user's folder")
    if info.st_mode & 0o077:
        raise PermissionError(f"{folder} is open to others")
    return folder


def start_time(pid: int, proc: Path = Path("/proc")) -> str | None:
    """``pid``'s start time (clock ticks after boot, field 22 of ``/proc/PID/stat``), or None."""
    try:
        stat = (proc / str(pid) / "stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()
    return fields[19] if len(fields) > 19 else None


@dataclass(slots=True)
class _Held:
    """One server group this desk holds niced: the lock file's descriptor, held shared."""

    fd: int
    path: Path


class ServerYield:
    """Lowers a local model server's CPU share while desk runs (see the module). Thread-safe.

    Args:
        nice: the group nice to give the server (1-19); 0 leaves every server alone.
        proc: where ``/proc`` is (tests).
        locks: where the holders' lock files go (None: :func:`runtime_dir`).
    """

    def __init__(self, nice: int, proc: Path = Path("/proc"), locks: Path | None = None) -> None:
        self._nice = max(0, min(19, nice))
        self._proc = proc
        self._locks = locks
        self._lock = threading.Lock()
        self._held: dict[int, _Held] = {}  # pid -> its lock file, held shared
        self._closed = False

    def _dir(self) -> Path:
        return self._locks if self._locks is not None else runtime_dir()

    def follow(self, base_url: str) -> int | None:
        """The server at ``base_url`` answered: lower its group's nice if it is a process of
        this user on this machine, in another session, and not lower already (by another
        desk: then hold it with that desk).

        Returns:
            the pid whose group this holds niced, or None.
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
            if self._closed or pid in self._held:
                return None
            held = self._take(pid)
            if held is None:
                return None
            self._held[pid] = held
        log.info("model server (pid %d) yields the CPU: its group's nice is %d", pid, self._nice)
        return pid

    def _take(self, pid: int) -> _Held | None:
        """Join the holders of ``pid``'s group, niced (None: it is not this desk's to hold)."""
        started = start_time(pid, self._proc)
        if started is None:
            return None
        try:
            folder = self._dir()
            path = folder / f"desk-server-nice-{pid}-{started}.lock"
            with _Mutex(folder):
                fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
                try:
                    held = self._join(pid, fd, path)
                except BaseException:
                    os.close(fd)
                    raise
                if not held:
                    os.close(fd)
                    return None
                return _Held(fd, path)
        except OSError as exc:
            log.info("model server (pid %d) left alone: %s", pid, exc)
            return None

    def _join(self, pid: int, fd: int, path: Path) -> bool:
        """Under the mutex: nice the group if it is not yet, note the nice it had, and hold
        ``fd`` shared. False when the group is niced as much by someone else (left alone)."""
        now = group_nice(pid, self._proc)
        if now is None:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            first = True
        except BlockingIOError:
            first = False  # another desk holds it: the nice it had is written already
        recorded = _read_before(fd)
        if first and recorded is None:
            if now >= self._nice:
                path.unlink()  # under the mutex, locked alone: nobody else has it open
                return False  # niced as much already, and not by a desk
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(now).encode(), 0)
        if now < self._nice and not set_group_nice(pid, self._nice, self._proc):
            return False
        fcntl.flock(fd, fcntl.LOCK_SH)
        return True

    def restore(self) -> None:
        """Let go of every group this holds; the last desk holding one puts its nice back
        (once; later :meth:`follow` calls do nothing)."""
        with self._lock:
            self._closed = True
            held, self._held = self._held, {}
        for pid, one in held.items():
            try:
                with _Mutex(one.path.parent):
                    fcntl.flock(one.fd, fcntl.LOCK_UN)
                    try:
                        fcntl.flock(one.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    except BlockingIOError:
                        continue  # another desk still holds it niced
                    before = _read_before(one.fd)
                    if before is not None and group_nice(pid, self._proc) == self._nice:
                        set_group_nice(pid, max(0, before), self._proc)
                    with contextlib.suppress(OSError):
                        one.path.unlink()  # under the mutex: nobody is opening it
            except OSError as exc:
                log.info("model server (pid %d): its nice was not put back: %s", pid, exc)
            finally:
                os.close(one.fd)


class _Mutex:
    """An exclusive ``flock`` on the folder's ``desk-server-nice.lock`` for a short while: one
    desk at a time joins or leaves the holders of any server."""

    def __init__(self, folder: Path) -> None:
        self._path = folder / "desk-server-nice.lock"
        self._fd = -1

    def __enter__(self) -> None:
        self._fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(self._fd, fcntl.LOCK_EX)

    def __exit__(self, *_exc: object) -> None:
        os.close(self._fd)  # lets go of the lock


def _read_before(fd: int) -> int | None:
    """The nice the group had before the first holder, as its lock file keeps it."""
    try:
        return int(os.pread(fd, 16, 0).decode().strip())
    except (OSError, ValueError, UnicodeDecodeError):
        return None


def _autogroups(proc: Path) -> bool:
    try:
        return (proc / "sys/kernel/sched_autogroup_enabled").read_text().strip() == "1"
    except OSError:
        return False
