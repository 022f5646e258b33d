"""desk ends a ``shell`` command's tree itself, on its running loop: a stop waits for no other
process to be let run.

The keeper (:mod:`agent.guard`) can end the tree, but it is a process of its own: asked by
SIGTERM it must be given a core to walk the tree and signal it, then the guard and the keeper
must run again to reap and exit, and desk again to read them. On busy cores each of these waits
for a core, and a process that has just used some CPU waits longest: at load ~1.5 on 2 cores
with both cores busy, the keeper was asked 1 ms after the stop and had signalled the tree 50 ms
later, for 1 ms of CPU (``bench/cancel_latency.py``).

So desk does the keeper's walk itself, in the process that is running already: every live
descendant of the keeper (found through ``/proc``, :func:`agent.guard_tree.descendants`), but
the keeper's own processes (the guard and a sandbox's wrappers, see :func:`spared`), is held by
a pidfd (its start time checked, so a recycled pid is never signalled) and gets SIGTERM and
SIGCONT; desk waits on the loop for the pidfds (the kernel makes them readable as the processes
exit: nothing but the dying processes has to run), walks again until a walk made once every
held process had exited finds no new one, and after ``grace_s`` sends SIGKILL the same way. The
tree is then empty but for the keeper, the guard and the wrappers, which no longer start
anything: :func:`kill_spared` ends them by SIGKILL (done by the kernel, no Python wake-up).

Until then the keeper and the guard stay as they were, subreapers above the tree: an orphan
still comes to them (and is found by the next walk), and if desk dies meanwhile the keeper's
parent-death signal still ends the tree. "Ended" counts the processes held alive whose pidfd
then said they exited, as the keeper counts.

Linux only (pidfds, ``/proc/PID/task/TID/children``); :func:`available` says when it is there:
elsewhere the keeper is asked, as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import signal
import time
from dataclasses import dataclass, field

from agent.guard_tree import descendants, only_children, start_time, stat_fields
from agent.stamps import stamp

_FIRST_SWEEP_S = 0.002
_LAST_SWEEP_S = 0.05


@dataclass(frozen=True, slots=True)
class TreeEnd:
    """What :func:`end_tree` did: the keeper's ``ended`` line, from desk's own count.

    Attributes:
        ended: processes held alive and then seen exited.
        survivors: processes still alive when the SIGKILL wait ran out.
        signals: the signals sent (``("SIGTERM",)``, ``("SIGTERM", "SIGKILL")`` or none).
        gone_at: ``time.monotonic()`` when the tree was seen gone, or the wait gave up.
    """

    ended: int
    survivors: int
    signals: tuple[str, ...]
    gone_at: float


def available() -> bool:
    """True when desk can walk and hold a tree itself (pidfds and ``/proc`` children files)."""
    return hasattr(os, "pidfd_open") and os.path.exists(f"/proc/self/task/{os.getpid()}/children")


def spared(keeper: int, guard: int | None, wrapped: int) -> frozenset[int]:
    """The keeper's own processes below it, never signalled by :func:`end_tree`: the guard
    (when it is still alive and the keeper's child: a pid no longer the keeper's child is not
    the guard's any more) and the ``wrapped`` processes below it, each the only child of the
    one above (a sandbox's: :data:`agent.sandbox_init.WRAPPERS`)."""
    if guard is None:
        return frozenset()
    fields = stat_fields(guard)
    if fields is None or len(fields) < 2 or fields[0] in (b"Z", b"X") or int(fields[1]) != keeper:
        return frozenset()
    return frozenset({guard, *only_children(guard, wrapped)})


@dataclass(slots=True)
class _Held:
    """The processes desk holds by pidfd: ``{pid: fd}``, and those seen exited."""

    fds: dict[int, int] = field(default_factory=dict)
    gone: set[int] = field(default_factory=set)

    def sweep(self, root: int, spared: frozenset[int]) -> list[int]:
        """Walk ``root``'s live descendants; hold and return the ones not held before."""
        new: list[int] = []
        for pid, started in descendants(root).items():
            if pid in self.fds or pid in spared:
                continue
            try:
                fd = os.pidfd_open(pid)
            except OSError:
                continue  # gone already
            if start_time(pid) != started:  # the pid was recycled in between
                os.close(fd)
                continue
            self.fds[pid] = fd
            new.append(pid)
        return new

    def alive(self) -> list[int]:
        """The held processes not seen exited (a readable pidfd: it exited)."""
        poller = select.poll()
        for pid, fd in self.fds.items():
            if pid not in self.gone:
                poller.register(fd, select.POLLIN)
        by_fd = {fd: pid for pid, fd in self.fds.items()}
        self.gone.update(by_fd[fd] for fd, _ in poller.poll(0))
        return [pid for pid in self.fds if pid not in self.gone]

    def send(self, pids: list[int], sig: signal.Signals) -> None:
        for pid in pids:
            with contextlib.suppress(OSError):  # exited meanwhile
                signal.pidfd_send_signal(self.fds[pid], sig)

    async def wait(self, pids: list[int], timeout_s: float) -> None:
        """Until every one of ``pids`` exited (their pidfds readable on the loop), or
        ``timeout_s``: one wake-up of the loop for a tree that dies at once, not one per
        process (each is a wait for a core on a busy machine)."""
        if not pids:
            return
        loop = asyncio.get_running_loop()
        exited = loop.create_future()
        left = {self.fds[pid] for pid in pids}

        def seen(fd: int) -> None:
            loop.remove_reader(fd)
            left.discard(fd)
            if not left and not exited.done():
                exited.set_result(None)

        for fd in left:
            loop.add_reader(fd, seen, fd)
        try:
            await asyncio.wait({exited}, timeout=max(timeout_s, 0.0))
        finally:
            for fd in left:
                loop.remove_reader(fd)

    def close(self) -> None:
        for fd in self.fds.values():
            os.close(fd)
        self.fds.clear()


async def _rounds(
    held: _Held,
    keeper: int,
    spared: frozenset[int],
    sig: signal.Signals,
    deadline: float,
    every_round: bool,
) -> bool:
    """Walk, signal what is new (or, with ``every_round``, everything alive), wait for the exits;
    until a walk made once every held process had exited finds no new one (True) or
    ``deadline`` (False)."""
    pause = _FIRST_SWEEP_S
    while True:
        all_gone = not held.alive()
        new = held.sweep(keeper, spared)
        targets = held.alive() if every_round else new
        held.send(targets, sig)
        if sig == signal.SIGTERM:
            held.send(targets, signal.SIGCONT)  # a stopped process gets to handle its TERM
        if new:
            stamp(f"desk.{sig.name.lower()}ed")
        if all_gone and not new:
            return True
        now = time.monotonic()
        if now >= deadline:
            return False
        await held.wait(held.alive(), min(pause, deadline - now))
        pause = min(pause * 2, _LAST_SWEEP_S)


async def end_tree(
    keeper: int, spared: frozenset[int], grace_s: float, kill_wait_s: float
) -> TreeEnd:
    """End every live descendant of ``keeper`` but ``spared``: SIGTERM (and SIGCONT), at most
    ``grace_s`` seconds, then SIGKILL for at most ``kill_wait_s`` seconds. Runs on the loop;
    a cancel during it is not taken until it returns (the caller shields it).

    Args:
        keeper: the keeper's pid (desk's child, not reaped yet: its pid is not recycled).
        spared: the keeper's own processes (:func:`spared`).
        grace_s: seconds between SIGTERM and SIGKILL.
        kill_wait_s: seconds of SIGKILL before what is left is reported as survivors.

    Returns:
        desk's count (:class:`TreeEnd`).
    """
    held = _Held()
    signals: list[str] = []
    try:
        gone = await _rounds(
            held, keeper, spared, signal.SIGTERM, time.monotonic() + grace_s, every_round=False
        )
        if held.fds:
            signals.append("SIGTERM")
        if not gone:
            signals.append("SIGKILL")
            deadline = time.monotonic() + kill_wait_s
            await _rounds(held, keeper, spared, signal.SIGKILL, deadline, every_round=True)
        gone_at = time.monotonic()
        stamp("desk.tree_gone")
        survivors = len(held.alive())
        return TreeEnd(len(held.fds) - survivors, survivors, tuple(signals), gone_at)
    finally:
        held.close()


__all__ = ["TreeEnd", "available", "end_tree", "spared"]
