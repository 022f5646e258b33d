"""Process endings and their receipts; ending a plain process group.

The ``shell`` tool's commands run under a keeper and a guard (:mod:`agent.guard`) that end the
command's whole tree themselves, a process that left the group included, and report what they
ended as a :class:`GroupEnding`, booked in the turn's :class:`ProcessLedger`.

A plain process group (a child started with ``start_new_session=True`` leads one whose id, the
pgid, is its pid; every process it starts joins it unless it leaves with ``setsid``) is ended by
:class:`ProcessGroup` the way ``systemd`` ends a unit:

1. ``killpg(pgid, SIGTERM)`` then ``SIGCONT`` (so stopped members get to handle the TERM);
2. poll until no member is alive, for at most ``grace_s`` seconds;
3. ``killpg(pgid, SIGKILL)`` (repeated at each poll, so a member forked in between is caught)
   until no member is alive, for at most ``kill_wait_s`` seconds.

"Alive" means a process whose ``/proc/<pid>/stat`` shows the group id and a state other than
zombie (``Z``) or dead (``X``): a zombie has exited and holds no resources but its pid until its
parent reaps it. The command's own shell is the caller's child and is reaped by asyncio; orphaned
grandchildren are re-parented to the nearest "child subreaper" or to PID 1, which reaps them in
its own time. A host that wants those pids gone at once too can call :func:`become_subreaper`
once at start-up: orphans then become its children and :class:`ProcessGroup` reaps the group's
zombies itself.

Without ``/proc`` (macOS) the group's existence is probed with ``killpg(pgid, 0)`` and member
counts are lower bounds.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass
from typing import TypeVar

from agent.guard_tree import stat_fields

_PROC = "/proc"
_PR_SET_CHILD_SUBREAPER = 36
_FIRST_POLL_S = 0.001
_MAX_POLL_S = 0.02

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class GroupEnding:
    """How one process group was ended.

    Attributes:
        pgid: the process group id (the pid of the command's shell).
        cause: why it was ended: ``"stop"`` (a hard stop cancelled the call), ``"timeout"``, or
            ``"leftover"`` (background processes still running after the command exited).
        ended: processes of the group seen alive and then gone (the shell included when it
            was still running); a lower bound when ``/proc`` is unavailable.
        signals: the signals sent, in order, e.g. ``("SIGTERM",)`` or ``("SIGTERM", "SIGKILL")``.
        survivors: members still alive when the bounded wait ran out (0 unless a member is
            stuck in the kernel or left the group's reach).
        elapsed_s: seconds from the first signal to the group being gone (or to giving up).
        gone_at: ``time.monotonic()`` when the group was seen gone (or the wait gave up).
        pid: the command's own process, where it is not ``pgid`` (under a keeper, ``pgid`` is
            the keeper's); None when it is ``pgid``.
    """

    pgid: int
    cause: str
    ended: int
    signals: tuple[str, ...]
    survivors: int
    elapsed_s: float
    gone_at: float = 0.0
    pid: int | None = None

    @property
    def command_pid(self) -> int:
        """The pid a user knows the command by: ``pid``, else ``pgid``."""
        return self.pid if self.pid is not None else self.pgid


class ProcessLedger:
    """A thread-safe record of the process groups a turn's tools ended.

    One ledger per turn lets the host say "N child processes ended" in its stop receipt even
    though a stopped tool call ends with ``CancelledError`` rather than a result.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._endings: list[GroupEnding] = []

    def record(self, ending: GroupEnding) -> None:
        """Book one group ending."""
        with self._lock:
            self._endings.append(ending)

    @property
    def endings(self) -> tuple[GroupEnding, ...]:
        """Every ending booked so far, in order."""
        with self._lock:
            return tuple(self._endings)

    @property
    def children_ended(self) -> int:
        """Processes ended so far, over every booked group."""
        with self._lock:
            return sum(ending.ended for ending in self._endings)


def _read_stat(pid: str) -> tuple[str, int] | None:
    """``(state, pgid)`` of ``/proc/<pid>/stat``; None when the process is gone."""
    fields = stat_fields(pid)
    if fields is None or len(fields) < 3:
        return None
    return fields[0].decode("ascii", "replace"), int(fields[2])


def has_procfs() -> bool:
    """True when ``/proc/<pid>/stat`` can be read (Linux)."""
    return os.path.exists(f"{_PROC}/self/stat")


def group_members(pgid: int) -> tuple[set[int], set[int]] | None:
    """The members of a process group, from ``/proc``.

    Args:
        pgid: the process group id.

    Returns:
        ``(alive, zombies)``: pids of members that are running (or sleeping, stopped...) and of
        members that exited but are not reaped yet; None without ``/proc``.
    """
    if not has_procfs():
        return None
    alive: set[int] = set()
    zombies: set[int] = set()
    with os.scandir(_PROC) as entries:
        for entry in entries:
            if not entry.name.isdigit():
                continue
            stat = _read_stat(entry.name)
            if stat is None or stat[1] != pgid:
                continue
            (zombies if stat[0] in ("Z", "X") else alive).add(int(entry.name))
    return alive, zombies


def _group_exists(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _signal_group(pgid: int, sig: signal.Signals) -> bool:
    """``killpg``; False when the group no longer exists."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    return True


def become_subreaper() -> bool:
    """Make this process the "child subreaper" of its descendants (Linux ``prctl``).

    Orphaned descendants (a command's grandchildren whose shell died first) are then re-parented
    to this process instead of PID 1, so :class:`ProcessGroup` can reap their zombies at once
    and their pids vanish when the group is ended. The attribute is process-wide and stays set:
    a descendant that double-forks to daemonise also becomes this process's child, and its
    zombie lingers until this process exits unless someone reaps it. Call it once, at start-up,
    in the host process only.

    Returns:
        True when the attribute is set; False where it is not supported (not Linux).
    """
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    return int(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0


def _reap(zombies: set[int], pgid: int, leader: int | None) -> None:
    """Reap this process's own zombie children among ``zombies`` (never the ``leader``).

    The leader is reaped by asyncio's child watcher; taking its status here would make asyncio
    report a wrong exit code. Each pid is re-checked to be a zombie of ``pgid`` right before
    ``waitpid``, so a recycled pid is never touched.
    """
    for pid in zombies:
        if pid == leader:
            continue
        stat = _read_stat(str(pid))
        if stat is None or stat[0] not in ("Z", "X") or stat[1] != pgid:
            continue
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


class ProcessGroup:
    """One process group that a tool started, and the means to end all of it.

    Args:
        pgid: the group id (for a child started with ``start_new_session=True``, its pid).
        leader: the pid whose exit status asyncio collects (never reaped here); defaults to
            ``pgid``.
    """

    def __init__(self, pgid: int, leader: int | None = None) -> None:
        self.pgid = pgid
        self.leader = pgid if leader is None else leader

    def alive(self) -> set[int] | None:
        """Pids of the group's live members; None when that cannot be told (no ``/proc``)."""
        if not _group_exists(self.pgid):  # fast path: no member at all, not even a zombie
            return set()
        members = group_members(self.pgid)
        if members is None:
            return None
        alive, zombies = members
        if zombies:
            _reap(zombies, self.pgid, self.leader)
        return alive

    def exists(self) -> bool:
        """True while any member of the group is alive (zombies do not count, with ``/proc``)."""
        alive = self.alive()
        if alive is None:
            return _group_exists(self.pgid)
        return bool(alive)

    async def terminate(
        self, *, grace_s: float = 2.0, kill_wait_s: float = 5.0, cause: str = "stop"
    ) -> GroupEnding:
        """End every member: SIGTERM (+SIGCONT), wait up to ``grace_s``, then SIGKILL.

        Runs to the end even if the awaiting task is cancelled again meanwhile: callers that
        must not leave processes behind await it through :func:`run_to_completion`.

        Args:
            grace_s: seconds the members get to exit after SIGTERM before SIGKILL.
            kill_wait_s: seconds to wait for the group to be gone after SIGKILL; members still
                alive then are reported as ``survivors``.
            cause: recorded in the result (``"stop"``, ``"timeout"``, ``"leftover"``).

        Returns:
            a :class:`GroupEnding` with the count of processes ended and the time it took.
        """
        started = time.monotonic()
        seen: set[int] = set()
        signals: list[str] = []
        alive = self.alive()
        if alive is not None:
            seen |= alive
            if not alive:
                return GroupEnding(self.pgid, cause, 0, (), 0, 0.0, time.monotonic())
        if not self._signal(signal.SIGTERM, alive):
            now = time.monotonic()
            return GroupEnding(self.pgid, cause, len(seen), (), 0, now - started, now)
        signals.append("SIGTERM")
        self._signal(signal.SIGCONT, alive)
        remaining = await self._wait_gone(seen, started + grace_s, None)
        if remaining:
            signals.append("SIGKILL")
            remaining = await self._wait_gone(seen, time.monotonic() + kill_wait_s, signal.SIGKILL)
        if alive is None and not seen:  # no /proc: at least the leader was ended
            seen.add(self.leader)
        survivors = len(remaining)
        now = time.monotonic()
        return GroupEnding(
            pgid=self.pgid,
            cause=cause,
            ended=max(0, len(seen) - survivors),
            signals=tuple(signals),
            survivors=survivors,
            elapsed_s=now - started,
            gone_at=now,
        )

    def _signal(self, sig: signal.Signals, _pids: set[int] | None) -> bool:
        """``killpg``; False when the group no longer exists."""
        return _signal_group(self.pgid, sig)

    async def _wait_gone(
        self, seen: set[int], deadline: float, resend: signal.Signals | None
    ) -> set[int]:
        """Poll until no member is alive or ``deadline`` passes; return them."""
        poll = _FIRST_POLL_S
        while True:
            if resend is not None and not self._signal(resend, seen):
                return set()
            alive = self.alive()
            if alive is None:
                alive = {self.leader} if _group_exists(self.pgid) else set()
            else:
                seen |= alive
            if not alive or time.monotonic() >= deadline:
                return alive
            await asyncio.sleep(poll)
            poll = min(poll * 2, _MAX_POLL_S)


async def run_to_completion(awaitable: asyncio.Future[T]) -> T:
    """Await ``awaitable`` to its end even if the calling task is cancelled meanwhile.

    A cancel that arrives while waiting is held back and re-raised (as
    :class:`asyncio.CancelledError`) once ``awaitable`` finished, so cleanup is never cut short.

    Args:
        awaitable: a future or task (e.g. ``asyncio.ensure_future(group.terminate())``); if it
            ends cancelled itself, that ``CancelledError`` propagates.

    Returns:
        its result.

    Raises:
        asyncio.CancelledError: after completion, when the caller was cancelled meanwhile.
    """
    cancelled = False
    while True:
        try:
            result = await asyncio.shield(awaitable)
            break
        except asyncio.CancelledError:
            if awaitable.done():
                result = awaitable.result()
                cancelled = True
                break
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError
    return result


__all__ = [
    "GroupEnding",
    "ProcessGroup",
    "ProcessLedger",
    "become_subreaper",
    "group_members",
    "has_procfs",
    "run_to_completion",
]
