"""Busy processes that take the cores, as a build, a browser or a local model server would.

``start_hogs(n)`` starts ``n`` processes running ``while True: pass``, each pinned with
``os.sched_setaffinity`` to one core (core ``i % cpu_count``), so that the benches measure desk
with every core busy rather than with one busy loop the scheduler can move away from desk.
``stop_hogs(procs)`` kills and reaps them. ``hogs(n)`` is the same pair as a context manager.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

HOG_CODE = "while True: pass"


def _cores() -> list[int]:
    """The cores this process may run on, in order (all of ``os.cpu_count()`` elsewhere)."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def start_hogs(n: int, *, apart: bool = False) -> list[subprocess.Popen[bytes]]:
    """Start ``n`` busy-loop processes, the i-th pinned to the i-th core (round robin).

    Args:
        n: how many processes (0: none).
        apart: start them in a session of their own, as a model server started in another
            terminal (or by a service manager) runs: where the kernel groups tasks by session
            (``/proc/sys/kernel/sched_autogroup_enabled``) or by cgroup, the busy processes then
            share the cores with desk's session as a group, not thread by thread. False: in the
            bench's own session, each busy loop weighs as much as each of desk's threads (the
            harder case: busy loops started with ``&`` from the shell desk then runs in).

    Returns:
        The processes, for :func:`stop_hogs`.

    Raises:
        OSError: a process could not be started.
    """
    cores = _cores()
    procs: list[subprocess.Popen[bytes]] = []
    for i in range(n):
        proc = subprocess.Popen([sys.executable, "-c", HOG_CODE], start_new_session=apart)
        procs.append(proc)
        if hasattr(os, "sched_setaffinity"):
            # the process may already have ended, or pinning may not be allowed here
            with contextlib.suppress(OSError):
                os.sched_setaffinity(proc.pid, {cores[i % len(cores)]})
    return procs


def stop_hogs(procs: list[subprocess.Popen[bytes]]) -> None:
    """Kill and reap every process :func:`start_hogs` started (those already gone are fine)."""
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
    for proc in procs:
        proc.wait()


@contextmanager
def hogs(n: int) -> Iterator[list[subprocess.Popen[bytes]]]:
    """``n`` pinned busy processes for the body of a ``with`` block, stopped on the way out."""
    procs = start_hogs(n)
    try:
        yield procs
    finally:
        stop_hogs(procs)
