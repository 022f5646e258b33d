"""Busy loops pinned to the cores, as a build or a model server computing beside desk would be.

:func:`start_hogs` starts ``n`` processes that spin (``while :; do :; done`` in ``sh``), the
``i``-th pinned to core ``i % cpu_count`` with ``os.sched_setaffinity``; :func:`stop_hogs` kills
them and waits. Benches use them to put the machine under load while they measure.
"""

from __future__ import annotations

import contextlib
import os
import subprocess


def start_hogs(n: int) -> list[subprocess.Popen[bytes]]:
    """Start ``n`` busy processes, each pinned to one core (round robin).

    Args:
        n: how many (0: none).

    Returns:
        The processes; give them to :func:`stop_hogs`.
    """
    cores = sorted(os.sched_getaffinity(0)) or [0]
    procs: list[subprocess.Popen[bytes]] = []
    for i in range(n):
        proc = subprocess.Popen(["sh", "-c", "while :; do :; done"])
        with contextlib.suppress(OSError):  # a core we may not use: the hog runs unpinned
            os.sched_setaffinity(proc.pid, {cores[i % len(cores)]})
        procs.append(proc)
    return procs


def stop_hogs(procs: list[subprocess.Popen[bytes]]) -> None:
    """Kill the processes :func:`start_hogs` started and wait for them."""
    for proc in procs:
        with contextlib.suppress(OSError):
            proc.kill()
    for proc in procs:
        proc.wait()
