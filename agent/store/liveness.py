"""Which process owns an open turn, and whether that process still runs.

Crash recovery closes a turn (or a queued prompt) left open only when its owner is gone, so a
second desk opening the same database never books a running turn of the first one as crashed.
The store asks an :class:`OwnerLiveness` (injected; :class:`LocalLiveness` by default) and never
looks at processes itself, so another rule (another way to name a process, owners on several
hosts) plugs in here without touching the store.

:class:`LocalLiveness` names an owner ``host:pid:start`` where ``start`` is the process start
time in clock ticks since boot (``/proc/<pid>/stat`` field 22, Linux) or ``-`` where that is
unknown; the start time tells a reused pid from the original process.
"""

from __future__ import annotations

import os
import socket
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
    """Owners on this machine, checked through ``/proc`` (see :func:`current_owner` and
    :func:`owner_alive`)."""

    @property
    def owner(self) -> str:
        """This process's ``host:pid:start`` (read when asked, so a forked child names itself)."""
        return current_owner()

    def is_alive(self, owner: str) -> bool:
        """Whether ``owner`` still runs (see :func:`owner_alive`)."""
        return owner_alive(owner)


def _stat_fields(pid: int) -> list[str] | None:
    """Fields of ``/proc/<pid>/stat`` after the command name, or None when unreadable."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return None
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


def current_owner() -> str:
    """The owner string of this process: ``host:pid:start``."""
    pid = os.getpid()
    return f"{socket.gethostname()}:{pid}:{_start_ticks(pid)}"


def owner_alive(owner: str) -> bool:
    """Whether the process named by ``owner`` still runs.

    A process on another host is assumed alive (it cannot be checked from here); an owner that
    does not parse (a row written before owners were recorded) is assumed gone; a zombie (killed
    but not yet reaped) is gone.
    """
    host, _, rest = owner.partition(":")
    pid_text, _, start = rest.partition(":")
    if not host or not pid_text.isdigit():
        return False
    if host != socket.gethostname():
        return True
    pid = int(pid_text)
    if pid <= 0:
        return False
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
        return False
    return not (start not in ("", "-") and len(fields) >= 20 and fields[19] != start)
