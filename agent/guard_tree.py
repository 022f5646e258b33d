"""How the keeper and the guard (:mod:`agent.guard`) end a process tree, and what they count.

How a tree is ended (:func:`end_tree`), by whichever of the two ends it: every live descendant
is found by walking ``/proc`` (a zombie is walked through, not counted) and held by a pidfd
(``os.pidfd_open``, its start time checked, so a recycled pid is never signalled); each gets
SIGTERM and SIGCONT once, the walk is repeated (a process forked meanwhile gets its SIGTERM
too) until the ender has no child left (a subreaper with no child has no descendant) or
``GRACE_S`` seconds passed; then SIGKILL, repeated over fresh walks, until no child is left
(at most 5 s). The ender never signals itself or its group, so it outlives what it ends.
"Ended" counts the processes seen alive whose pidfd then said they exited (the guard not
counted); "survivors" the others.

Standard library only: run inside the keeper with ``-I -S``. desk's own ender
(:mod:`agent.tools.tree_end`) holds and signals the tree with the same :class:`Held`.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import time

KILL_WAIT_S = 5.0
"""Seconds an ender keeps sending SIGKILL before it reports what is left as survivors."""

ENDING_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
"""The signals that ask the keeper (or the guard) to end the tree."""

STAMPS_ENV = "DESK_STAMPS"
"""The stamps file (:mod:`agent.stamps`), inherited from desk; the keeper appends to it."""

_FIRST_SWEEP_S = 0.002
_LAST_SWEEP_S = 0.05


def stamp(what: str) -> None:
    """Append one line to the stamps file, as :func:`agent.stamps.stamp` does (the thread is
    ``keeper-<pid>``); nothing without ``DESK_STAMPS``. Never raises."""
    path = os.environ.get(STAMPS_ENV)
    if not path:
        return
    line = f"{time.monotonic():.6f} keeper-{os.getpid()} {what}  {time.process_time():.6f}\n"
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)


def _scan() -> dict[int, tuple[int, bool, bytes]] | None:
    """Every process in ``/proc``: ``{pid: (ppid, alive, start time)}``; None without /proc."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return None
    found: dict[int, tuple[int, bool, bytes]] = {}
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                raw = handle.read()
        except OSError:
            continue
        # "pid (comm) state ppid pgrp ... starttime(22nd)": comm may hold spaces and ")".
        fields = raw[raw.rfind(b")") + 2 :].split()
        if len(fields) > 19:
            found[int(name)] = (int(fields[1]), fields[0] not in (b"Z", b"X"), fields[19])
    return found


def descendants(root: int) -> dict[int, bytes]:
    """Live descendants of ``root`` from ``/proc``: ``{pid: start time}`` (``root`` excluded).

    Walks each process's ``/proc/PID/task/TID/children`` down from ``root`` (a few reads per
    process of the tree), else every ``/proc/PID/stat``. Zombies are walked through (an exiting
    parent's children may still name it) but not returned. Empty without ``/proc``.
    """
    if not os.path.exists(f"/proc/self/task/{os.getpid()}/children"):
        return _descendants_by_scan(root)
    found: dict[int, bytes] = {}
    todo = [root]
    seen = {root}
    while todo:
        for child in children(todo.pop()):
            if child in seen:
                continue
            seen.add(child)
            todo.append(child)
            stat = _stat(child)
            if stat is not None and stat[0]:
                found[child] = stat[1]
    return found


def children(pid: int) -> list[int]:
    """``pid``'s children, from each of its threads' ``children`` file."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    out: list[int] = []
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children", "rb") as handle:
                out.extend(int(word) for word in handle.read().split())
        except OSError:
            continue
    return out


def only_children(pid: int, depth: int) -> list[int]:
    """Up to ``depth`` processes below ``pid``, each the only child of the one above (the
    sandbox's wrappers below the guard: :data:`agent.sandbox_init.WRAPPERS`)."""
    chain: list[int] = []
    while len(chain) < depth:
        kids = children(pid)
        if len(kids) != 1:
            break
        pid = kids[0]
        chain.append(pid)
    return chain


def stat_fields(pid: int | str) -> list[bytes] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (state, ppid, pgrp...: the
    name may hold spaces and parentheses); None when the process is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            raw = handle.read()
    except OSError:
        return None
    return raw[raw.rfind(b")") + 2 :].split()


def _stat(pid: int) -> tuple[bool, bytes] | None:
    """``(alive, start time)`` of ``pid`` (alive: not a zombie); None when it is gone."""
    fields = stat_fields(pid)
    if fields is None or len(fields) <= 19:
        return None
    return fields[0] not in (b"Z", b"X"), fields[19]


def _descendants_by_scan(root: int) -> dict[int, bytes]:
    """:func:`descendants` from every process's ``/proc/PID/stat``."""
    table = _scan() or {}
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found: dict[int, bytes] = {}
    todo = [root]
    seen = {root}
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in seen:
                seen.add(child)
                todo.append(child)
                if table[child][1]:
                    found[child] = table[child][2]
    return found


def start_time(pid: int) -> bytes | None:
    """``pid``'s start time (``/proc/<pid>/stat`` field 22, clock ticks since boot, as
    bytes); None when it is gone."""
    stat = _stat(pid)
    return stat[1] if stat is not None else None


class Held:
    """The processes an ender saw, each held by a pidfd (-1 where there are no pidfds): the
    keeper's and the guard's (:func:`end_tree`) and desk's own (:mod:`agent.tools.tree_end`).

    Attributes:
        fds: ``{pid: pidfd}`` of every process held (a pidfd keeps its pid from being recycled:
            what is signalled through it is the process that was walked).
        gone: the held pids seen exited.
    """

    def __init__(self) -> None:
        self.fds: dict[int, int] = {}
        self.gone: set[int] = set()

    def sweep(self, root: int, skip: frozenset[int] = frozenset()) -> list[int]:
        """Walk ``root``'s descendants; hold and return the ones not held before (but
        ``skip``: never held, never signalled)."""
        new: list[int] = []
        for pid, started in descendants(root).items():
            if pid in self.fds or pid in skip:
                continue
            try:
                fd = os.pidfd_open(pid) if hasattr(os, "pidfd_open") else -1
            except OSError:
                continue  # gone already
            if start_time(pid) != started:  # the pid was recycled in between
                if fd >= 0:
                    os.close(fd)
                continue
            self.fds[pid] = fd
            new.append(pid)
        return new

    def alive(self) -> list[int]:
        """The held processes that have not exited (a zombie has exited)."""
        poller = select.poll()
        for pid, fd in self.fds.items():
            if pid not in self.gone and fd >= 0:
                poller.register(fd, select.POLLIN)
        by_fd = {fd: pid for pid, fd in self.fds.items()}
        self.gone.update(by_fd[fd] for fd, _ in poller.poll(0))
        for pid, fd in self.fds.items():  # without pidfds: /proc says
            if fd < 0 and pid not in self.gone and not _running(pid):
                self.gone.add(pid)
        return [pid for pid in self.fds if pid not in self.gone]

    def send(self, pids: list[int], sig: signal.Signals) -> None:
        """Send ``sig`` to each of ``pids`` (held); one that exited meanwhile is skipped."""
        for pid in pids:
            fd = self.fds[pid]
            with contextlib.suppress(OSError):
                if fd >= 0:
                    signal.pidfd_send_signal(fd, sig)
                else:
                    os.kill(pid, sig)

    def wait(self, timeout_s: float) -> None:
        """Until a held live process exits, or ``timeout_s``; a millisecond at most when none
        of them is left to wait for (what keeps the ender waiting is then a child not yet
        held, or not yet reaped: the next sweep and reap see to it)."""
        poller = select.poll()
        watched = 0
        for pid in self.alive():
            if self.fds[pid] >= 0:
                poller.register(self.fds[pid], select.POLLIN)
                watched += 1
        if not watched and all(fd >= 0 for fd in self.fds.values()):
            timeout_s = min(timeout_s, 0.001)
        poller.poll(max(0, int(timeout_s * 1000)) or 1)

    def close(self) -> None:
        """Close every pidfd (idempotent)."""
        for fd in self.fds.values():
            if fd >= 0:
                os.close(fd)
        self.fds.clear()


def _running(pid: int) -> bool:
    """True while ``pid`` runs (not a zombie), from ``/proc``."""
    stat = _stat(pid)
    return stat is not None and stat[0]


def _reap() -> bool:
    """Reap every exited child; True while this process still has a child."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False
        if pid == 0:
            return True


def end_tree(
    grace_s: float, *, uncounted: frozenset[int] = frozenset(), kill_wait_s: float = KILL_WAIT_S
) -> tuple[int, int, tuple[str, ...], float]:
    """End every descendant of this process (a child subreaper): SIGTERM, grace, SIGKILL.

    The process ignores SIGTERM, SIGHUP and SIGINT from then on, and never signals itself.

    Args:
        grace_s: seconds the processes get after SIGTERM before SIGKILL.
        uncounted: pids ended last and not counted (the guard, when the keeper ends the tree):
            they get no SIGTERM (the guard exits when its command does) and SIGKILL only once
            nothing else is left, so that if the keeper is killed meanwhile the guard is still
            there to end its own tree.
        kill_wait_s: seconds of SIGKILL before giving up on what is left.

    Returns:
        ``(ended, survivors, signals, gone_at)``: processes seen alive then gone, and still
        alive; the signals sent (``("SIGTERM",)``, ``("SIGTERM", "SIGKILL")`` or none); the
        ``time.monotonic()`` when the tree was gone or the ender gave up.
    """
    for sig in ENDING_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    me = os.getpid()
    held = Held()
    signals: list[str] = []
    try:
        deadline = time.monotonic() + grace_s
        pause = _FIRST_SWEEP_S
        while True:
            new = held.sweep(me)
            if new and not signals:
                signals.append("SIGTERM")
            new = [pid for pid in new if pid not in uncounted]
            held.send(new, signal.SIGTERM)
            held.send(new, signal.SIGCONT)
            if new:
                stamp("keeper.termed")
            if not _reap() or time.monotonic() >= deadline:
                break
            held.wait(min(pause, deadline - time.monotonic()))
            pause = min(pause * 2, _LAST_SWEEP_S)
        if _reap():
            signals.append("SIGKILL")
            deadline = time.monotonic() + kill_wait_s
            while True:
                held.sweep(me)
                alive = held.alive()
                held.send([p for p in alive if p not in uncounted] or alive, signal.SIGKILL)
                if not _reap() or time.monotonic() >= deadline:
                    break
                held.wait(_FIRST_SWEEP_S)
        gone_at = time.monotonic()
        stamp("keeper.tree_gone")
        left = set(held.alive())
        counted = [pid for pid in held.fds if pid not in uncounted]
        survivors = sum(1 for pid in counted if pid in left)
        return len(counted) - survivors, survivors, tuple(signals), gone_at
    finally:
        held.close()


__all__ = [
    "ENDING_SIGNALS",
    "KILL_WAIT_S",
    "Held",
    "children",
    "descendants",
    "end_tree",
    "only_children",
    "start_time",
]
