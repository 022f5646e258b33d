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
a pidfd (its start time checked, so a recycled pid is never signalled; the holder is the
keeper's own, :class:`agent.guard_tree.Held`) and gets SIGTERM and SIGCONT. A stop does this
first on the thread that stops (:meth:`Tree.term`, before the turn's loop is woken: the tree
dies while the loop waits for a core); the loop then waits for the pidfds (the kernel makes
them readable as the processes exit: nothing but the dying processes has to run), walks again
until a walk made once every held process had exited finds no new one, and after ``grace_s``
(from the first SIGTERM) sends SIGKILL the same way (:meth:`Tree.end`). The keeper and the
guard, with nothing left below them, then exit by themselves.

Until then the keeper and the guard stay as they were, subreapers above the tree: an orphan
still comes to them (and is found by the next walk), and if desk dies meanwhile the keeper's
parent-death signal still ends the tree. "Ended" counts the processes held alive whose pidfd
then said they exited, as the keeper counts.

Linux only (pidfds, ``/proc/PID/task/TID/children``); :func:`available` says when it is there:
elsewhere the keeper is asked, as before.
"""

from __future__ import annotations

import asyncio
import os
import select
import signal
import threading
import time
from dataclasses import dataclass

from agent.guard_tree import Held, only_children, stat_fields
from agent.stamps import stamp

_FIRST_SWEEP_S = 0.002
_LAST_SWEEP_S = 0.05


@dataclass(frozen=True, slots=True)
class TreeEnd:
    """What :meth:`Tree.end` did: the keeper's ``ended`` line, from desk's own count.

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
    """The keeper's own processes below it, never signalled by :class:`Tree`: the guard
    (when it is still alive and the keeper's child: a pid no longer the keeper's child is not
    the guard's any more) and the ``wrapped`` processes below it, each the only child of the
    one above (a sandbox's: :data:`agent.sandbox_init.WRAPPERS`)."""
    if guard is None:
        return frozenset()
    fields = stat_fields(guard)
    if fields is None or len(fields) < 2 or fields[0] in (b"Z", b"X") or int(fields[1]) != keeper:
        return frozenset()
    return frozenset({guard, *only_children(guard, wrapped)})


class Tree:
    """One keeper's tree as desk ends it: the processes below the keeper (but the keeper's
    own, :func:`spared`), held by pidfds, signalled from any thread.

    A stop signals the tree on the thread that stops (:meth:`term`, before the turn's loop is
    woken: the processes are let die while the loop waits for a core); the loop then finishes
    the ending (:meth:`end`). The holder (:class:`agent.guard_tree.Held`) is shared under a
    lock, so what one thread held and signalled the other counts and waits for.

    Args:
        keeper: the keeper's pid (desk's child, not reaped: the pid is not recycled; the
            keeper is checked alive through a pidfd before each walk).
        guard: the guard's pid.
        wrapped: the sandbox's wrappers below the guard (:func:`spared`).

    Raises:
        OSError: the keeper is gone (no pidfd could be opened on it).
    """

    def __init__(self, keeper: int, guard: int, wrapped: int) -> None:
        self.keeper = keeper
        self.guard = guard
        self.wrapped = wrapped
        self.termed_at: float | None = None
        """``time.monotonic()`` of the first SIGTERM (the grace runs from there)."""
        self._keeper_fd = os.pidfd_open(keeper)
        self._held = Held()
        self._spared: frozenset[int] | None = None
        self._lock = threading.Lock()
        self._closed = False

    def term(self) -> bool:
        """Walk the tree; hold, SIGTERM and SIGCONT what was not held before. Thread-safe,
        never blocks on another process (a few ``/proc`` reads per process of the tree).

        Returns:
            False when nothing was done: the tree was closed, or the keeper has exited (its
            tree is no longer below it; the keeper's own ending is then waited for).
        """
        with self._lock:
            if self._closed or _exited(self._keeper_fd):
                return False
            self._round(signal.SIGTERM, every=False)
            return True

    def _round(self, sig: signal.Signals, every: bool) -> list[int]:
        """Under the lock: walk, hold what is new, send ``sig`` (SIGTERM: and SIGCONT, so a
        stopped process gets to handle it) to what is new, or to all alive with ``every``."""
        if self._spared is None:
            self._spared = spared(self.keeper, self.guard, self.wrapped)
        held = self._held
        new = held.sweep(self.keeper, self._spared)
        targets = held.alive() if every else new
        held.send(targets, sig)
        if sig == signal.SIGTERM:
            held.send(targets, signal.SIGCONT)
            if self.termed_at is None:
                self.termed_at = time.monotonic()
        if new:
            stamp(f"desk.{sig.name.lower()}ed")
        return new

    async def _rounds(self, sig: signal.Signals, deadline: float, every: bool) -> bool:
        """Walk, signal, wait for the exits; until a walk made once every held process had
        exited finds no new one (True) or ``deadline`` (False)."""
        pause = _FIRST_SWEEP_S
        while True:
            with self._lock:
                all_gone = not self._held.alive()
                new = self._round(sig, every)
                alive = self._held.alive()
                fds = [self._held.fds[pid] for pid in alive]
            if all_gone and not new:
                return True
            now = time.monotonic()
            if now >= deadline:
                return False
            await _wait_readable(fds, min(pause, deadline - now))
            pause = min(pause * 2, _LAST_SWEEP_S)

    async def end(self, grace_s: float, kill_wait_s: float) -> TreeEnd:
        """End every live descendant of the keeper but its own processes: SIGTERM (and
        SIGCONT; counted from :meth:`term`'s when it came first), at most ``grace_s`` seconds,
        then SIGKILL for at most ``kill_wait_s`` seconds. Runs on the loop; a cancel during it
        is not taken until it returns (the caller shields it). The pidfds are closed after.

        Returns:
            desk's count (:class:`TreeEnd`): what was held alive and then seen exited.
        """
        signals: list[str] = []
        try:
            start = self.termed_at if self.termed_at is not None else time.monotonic()
            gone = await self._rounds(signal.SIGTERM, start + grace_s, every=False)
            with self._lock:
                if self._held.fds:
                    signals.append("SIGTERM")
            if not gone:
                signals.append("SIGKILL")
                deadline = time.monotonic() + kill_wait_s
                await self._rounds(signal.SIGKILL, deadline, every=True)
            gone_at = time.monotonic()
            stamp("desk.tree_gone")
            with self._lock:
                survivors = len(self._held.alive())
                held = len(self._held.fds)
            return TreeEnd(held - survivors, survivors, tuple(signals), gone_at)
        finally:
            self.close()

    @property
    def closed(self) -> bool:
        """True once :meth:`close` ran (after :meth:`end`): a later ending needs a new tree."""
        return self._closed

    def close(self) -> None:
        """Close the pidfds; :meth:`term` does nothing from then on. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._held.close()
            os.close(self._keeper_fd)


def _exited(pidfd: int) -> bool:
    """True when the process held by ``pidfd`` has exited (its pidfd is readable)."""
    return bool(select.select([pidfd], [], [], 0)[0])


async def _wait_readable(fds: list[int], timeout_s: float) -> None:
    """Until every one of ``fds`` (pidfds) is readable on the loop, or ``timeout_s``: one
    wake-up of the loop for a tree that dies at once, not one per process (each is a wait
    for a core on a busy machine)."""
    if not fds:
        return
    loop = asyncio.get_running_loop()
    exited = loop.create_future()
    left = set(fds)

    def seen(fd: int) -> None:
        loop.remove_reader(fd)
        left.discard(fd)
        if not left and not exited.done():
            exited.set_result(None)

    for fd in fds:
        loop.add_reader(fd, seen, fd)
    try:
        await asyncio.wait({exited}, timeout=max(timeout_s, 0.0))
    finally:
        for fd in left:
            loop.remove_reader(fd)


def hold(keeper: int, guard: int, wrapped: int) -> Tree | None:
    """A :class:`Tree` of ``keeper`` (same arguments), or None when desk cannot end it itself:
    no pidfds or ``/proc`` children files (:func:`available`), or the keeper is gone."""
    if not available():
        return None
    try:
        return Tree(keeper, guard, wrapped)
    except OSError:
        return None


__all__ = ["Tree", "TreeEnd", "available", "hold", "spared"]
