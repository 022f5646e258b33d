"""Which process owns an open turn, and whether that process still runs.

Crash recovery closes a turn (or a queued prompt, or a compression lease) left open only when
its owner is provably gone, so a second desk opening the same database never books a running
turn of the first one as crashed. The store asks an :class:`OwnerLiveness` (injected;
:class:`LocalLiveness` by default) and never looks at processes itself, so another rule (owners
on several hosts, behind a database server) plugs in here without touching the store.

:class:`LocalLiveness` names an owner ``host:pid:start:boot:pidns``:

- ``start``: the process start time in clock ticks since boot (``/proc/<pid>/stat`` field 22),
  which tells a reused pid from the original process;
- ``boot``: the kernel's boot id (``/proc/sys/kernel/random/boot_id``);
- ``pidns``: the inode of the process's pid namespace (``/proc/self/ns/pid``);

each ``-`` where unknown. The host is only a label: liveness never depends on it, so a database
opened again under another hostname (a container started anew) recovers what a crash left.
The rules, in order:

1. another boot id: gone (a restart ends every process; a SQLite file in WAL mode is only ever
   shared by processes of one running kernel);
2. the same pid namespace: the pid must exist with the same start time, and not be a zombie;
3. another pid namespace of the same boot (a sibling container on the same volume, or an
   earlier run of this container): its pid cannot be seen from here, so every owner with a
   lock folder also holds a *life lock*, an ``flock`` on ``<folder>/<boot>-<pidns>-<pid>-<start>``
   that the kernel lets go when the process dies: held means alive, free means gone, no file
   means it cannot be told (alive).

An owner string of an older desk (``host:pid:start``) is checked as it was: on this host by pid
and start time, on another host assumed alive; garbage is gone.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import threading
from pathlib import Path
from typing import Protocol, runtime_checkable


@runtime_checkable
class OwnerLiveness(Protocol):
    """This process's owner identity, and whether the process an owner string names still runs."""

    @property
    def owner(self) -> str:
        """The owner string of this process, written on the turns and queued prompts it owns."""
        ...

    def is_alive(self, owner: str) -> bool:
        """Whether the process named by ``owner`` (another process's owner string) still runs.

        Args:
            owner: an owner string read from a row (possibly from an older desk, or garbage).

        Returns:
            True when it may still run (then its rows are left alone); never raises.
        """
        ...


class LocalLiveness:
    """Owners on this machine, checked through ``/proc`` and life locks (see the module).

    Args:
        lock_dir: the folder of life locks, shared by every process that opens the same
            database (beside it); None: no life lock (owners in other pid namespaces of this
            boot are then taken as alive).
        host: the hostname written in owner strings (default: this machine's); a label only.
    """

    def __init__(self, lock_dir: Path | None = None, *, host: str | None = None) -> None:
        self._lock_dir = lock_dir
        self._host = host

    @property
    def owner(self) -> str:
        """This process's owner string (read when asked, so a forked child names itself); the
        first time in a process, its life lock in ``lock_dir`` is taken."""
        if self._lock_dir is not None:
            hold_life_lock(self._lock_dir)
        return current_owner(self._host)

    def is_alive(self, owner: str) -> bool:
        """Whether ``owner`` still runs (see :func:`owner_alive`)."""
        return owner_alive(owner, self._lock_dir)


def _read(path: str) -> str:
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            return handle.read().strip()
    except OSError:
        return ""


def boot_id() -> str:
    """This kernel's boot id, or ``-`` where there is none to read."""
    return _read("/proc/sys/kernel/random/boot_id") or "-"


def pid_namespace() -> str:
    """The inode number of this process's pid namespace, or ``-``."""
    try:
        link = os.readlink("/proc/self/ns/pid")  # "pid:[4026531836]"
    except OSError:
        return "-"
    inode = link.partition("[")[2].rstrip("]")
    return inode if inode.isdigit() else "-"


def _stat_fields(pid: int) -> list[str] | None:
    """Fields of ``/proc/<pid>/stat`` after the command name, or None when unreadable."""
    text = _read(f"/proc/{pid}/stat")
    close = text.rfind(")")
    if close < 0:
        return None
    return text[close + 2 :].split()


def _start_ticks(pid: int) -> str:
    fields = _stat_fields(pid)
    # After "pid (comm) ", field 3 (state) is index 0, so field 22 (starttime) is index 19.
    if fields is None or len(fields) < 20:
        return "-"
    return fields[19]


def current_owner(host: str | None = None) -> str:
    """The owner string of this process: ``host:pid:start:boot:pidns``.

    Args:
        host: the label to write (default: this machine's hostname).
    """
    pid = os.getpid()
    label = host if host is not None else socket.gethostname()
    return f"{label}:{pid}:{_start_ticks(pid)}:{boot_id()}:{pid_namespace()}"


def _pid_alive(pid_text: str, start: str) -> bool:
    """Whether the pid runs in this pid namespace with the start time ``start`` (``-``: any)."""
    if not pid_text.isdigit() or int(pid_text) <= 0:
        return False
    pid = int(pid_text)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    fields = _stat_fields(pid)
    if fields is None:
        return True  # no /proc: the pid exists, trust it
    if fields and fields[0] == "Z":
        return False  # killed, not yet reaped
    return not (start not in ("", "-") and len(fields) >= 20 and fields[19] != start)


def owner_alive(owner: str, lock_dir: Path | None = None) -> bool:
    """Whether the process named by ``owner`` still runs (the rules of the module).

    Args:
        owner: an owner string read from a row.
        lock_dir: the folder of life locks, for owners in another pid namespace.
    """
    parts = owner.split(":")
    if len(parts) == 3:  # an older desk's host:pid:start
        host, pid_text, start = parts
        if not host or not pid_text.isdigit():
            return False
        return host != socket.gethostname() or _pid_alive(pid_text, start)
    if len(parts) != 5 or not parts[1].isdigit():
        return False
    _host, pid_text, start, boot, namespace = parts
    here = boot_id()
    if "-" in (boot, here):  # no boot id to compare: the older rule
        return _pid_alive(pid_text, start)
    if boot != here:
        return False
    if namespace == pid_namespace():
        return _pid_alive(pid_text, start)
    if lock_dir is None:
        return True
    return _life_lock_held(lock_dir / _lock_name(boot, namespace, pid_text, start))


def lease_holder(owner: str, attempt: str) -> str:
    """The lease holder string of an attempt of ``owner``: ``<owner>/<attempt>``, so the store
    can tell when the holder's process is gone (:func:`holder_owner`)."""
    return f"{owner}/{attempt}"


def holder_owner(holder: str) -> str | None:
    """The owner a lease holder string names (see :func:`lease_holder`), or None for a holder
    that names none (an older desk's ``desk-<id>``: only its expiry frees it)."""
    owner, slash, _attempt = holder.rpartition("/")
    return owner if slash and owner else None


# -- life locks ---------------------------------------------------------------------------------

_HELD: dict[str, tuple[int, int]] = {}  # lock folder -> (pid that took it, fd)
_HELD_LOCK = threading.Lock()


def _lock_name(boot: str, namespace: str, pid: str, start: str) -> str:
    return f"{boot}-{namespace}-{pid}-{start}"


def _forget_after_fork() -> None:
    # A forked child must not keep its parent's lock alive, nor think it holds one.
    for _pid, fd in _HELD.values():
        with contextlib.suppress(OSError):
            os.close(fd)
    _HELD.clear()


os.register_at_fork(after_in_child=_forget_after_fork)


def hold_life_lock(lock_dir: Path) -> bool:
    """Take this process's life lock in ``lock_dir`` (once per process and folder).

    The lock is held until the process ends (the kernel lets it go however it ends); its file
    descriptor is not inherited by programs the process starts.

    Returns:
        False when the folder or the file cannot be written (then none is held).
    """
    key = str(lock_dir)
    pid = os.getpid()
    with _HELD_LOCK:
        held = _HELD.get(key)
        if held is not None and held[0] == pid:
            return True
        name = _lock_name(boot_id(), pid_namespace(), str(pid), _start_ticks(pid))
        try:
            lock_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(lock_dir / name, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        _HELD[key] = (pid, fd)
        _sweep(lock_dir)
        return True


def _life_lock_held(path: Path) -> bool:
    """Whether some process holds the life lock at ``path`` (no file: cannot tell, True)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    except FileNotFoundError:
        return True
    except OSError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return True
    finally:
        os.close(fd)  # closing our descriptor lets go of a lock we took
    return False


def _sweep(lock_dir: Path) -> None:
    """Remove the life locks of earlier boots, and those of this boot and pid namespace whose
    process is gone (their owners are gone, provably; in this namespace the pid tells, not
    the file): one file per run piled up. Those of other namespaces of this boot stay (there
    the file is all that tells a crashed owner from a live one)."""
    here = boot_id()
    if here == "-":
        return
    ours = f"{here}-{pid_namespace()}-"
    with contextlib.suppress(OSError):
        for entry in os.scandir(lock_dir):
            if entry.name.startswith(ours):
                pid, _dash, start = entry.name[len(ours) :].partition("-")
                gone = not _pid_alive(pid, start)
            else:
                gone = not entry.name.startswith(here)
            if gone:
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)


def refusal(session_id: str, owner: str) -> str:
    """The one line that refuses a session another live desk holds.

    Args:
        session_id: the session.
        owner: the holder's owner string (``host:pid:...``, see
            :mod:`agent.store.liveness`).
    """
    parts = owner.split(":")
    pid = f" (pid {parts[1]})" if len(parts) >= 2 and parts[1].isdigit() else ""
    return f"session {session_id} is open in another desk{pid}; close it there first"
