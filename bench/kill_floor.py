"""The floor under a stop of a shell call: how long bare processes and threads take, with no desk.

A stop of a running ``shell`` call needs the command's processes to be given a core to die, and
the turn's thread to be given one to return. This bench measures the same steps in a tiny
script, under the same busy cores (``--hog N``, ``bench/load.py``, in this process's session
as ``cancel_latency.py``'s are), each at a random moment:

- ``kill_sleep_ms``: a ``sleep`` in a session of its own, SIGKILL through a pidfd -> its pidfd
  readable (it exited);
- ``term_tree_ms``: ``/bin/sh -c 'echo $$; sleep 30'`` (the bench's command: the shell and its
  ``sleep``), SIGTERM to both through pidfds -> both exited;
- ``thread_wake_ms``: a thread blocked in ``select`` on a pipe; one byte written -> it runs;
- ``stop_chain_ms``: the least a stop of that command needs: SIGTERM to both, one byte to a
  thread blocked on a pipe, which then waits for both pidfds and returns -> returned.

``stop_chain_ms`` is the floor of ``cancel_latency.py --phases tool``'s stop -> worker exited
at the same load: what is left above it is desk's own. Prints one JSON object (p50/p95/p99/max
per figure, the 1-minute load average before and after). Usage::

    .venv/bin/python bench/kill_floor.py [--runs 100] [--hog 2] [--seed 1]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from load import start_hogs, stop_hogs  # noqa: E402
from stats import percentiles  # noqa: E402

COMMAND = ["/bin/sh", "-c", "echo $$; sleep 30"]


def wait_all(fds: list[int]) -> None:
    """Until every pidfd of ``fds`` is readable (its process exited)."""
    left = set(fds)
    while left:
        readable, _, _ = select.select(list(left), [], [])
        left -= set(readable)


def kill_sleep(pause: float) -> float:
    """SIGKILL to a ``sleep`` -> it exited, ms."""
    proc = subprocess.Popen(["sleep", "30"], start_new_session=True)
    fd = os.pidfd_open(proc.pid)
    try:
        time.sleep(pause)
        started = time.monotonic()
        signal.pidfd_send_signal(fd, signal.SIGKILL)
        wait_all([fd])
        return (time.monotonic() - started) * 1000.0
    finally:
        os.close(fd)
        proc.wait()


def shell_tree() -> tuple[subprocess.Popen[bytes], list[int]]:
    """The bench's command, started and printed its pid; pidfds of the shell and its sleep."""
    proc = subprocess.Popen(COMMAND, start_new_session=True, stdout=subprocess.PIPE)
    assert proc.stdout is not None
    proc.stdout.readline()
    fds = [os.pidfd_open(proc.pid)]
    while len(fds) < 2:  # the sleep is forked after the echo
        with open(f"/proc/{proc.pid}/task/{proc.pid}/children") as handle:
            kids = [int(word) for word in handle.read().split()]
        if kids:
            fds.append(os.pidfd_open(kids[0]))
        else:
            time.sleep(0.001)
    return proc, fds


def end_tree(proc: subprocess.Popen[bytes], fds: list[int]) -> None:
    for fd in fds:
        os.close(fd)
    proc.wait()
    assert proc.stdout is not None
    proc.stdout.close()


def term_tree(pause: float) -> float:
    """SIGTERM to the shell and its sleep -> both exited, ms."""
    proc, fds = shell_tree()
    try:
        time.sleep(pause)
        started = time.monotonic()
        for fd in fds:
            signal.pidfd_send_signal(fd, signal.SIGTERM)
        wait_all(fds)
        return (time.monotonic() - started) * 1000.0
    finally:
        end_tree(proc, fds)


def thread_wake(pause: float, fds: list[int] | None = None) -> float:
    """One byte to a thread blocked on a pipe -> it ran (and, with ``fds``, they exited), ms;
    with ``fds`` their processes get SIGTERM first."""
    read_end, write_end = os.pipe()
    woke: list[float] = []

    def waiter() -> None:
        select.select([read_end], [], [])
        if fds:
            wait_all(fds)
        woke.append(time.monotonic())

    thread = threading.Thread(target=waiter)
    thread.start()
    try:
        time.sleep(pause)
        started = time.monotonic()
        for fd in fds or ():
            signal.pidfd_send_signal(fd, signal.SIGTERM)
        os.write(write_end, b"x")
        thread.join()
        return (woke[0] - started) * 1000.0
    finally:
        os.close(read_end)
        os.close(write_end)


def stop_chain(pause: float) -> float:
    """SIGTERM to the tree, wake a thread that waits for it and returns -> returned, ms."""
    proc, fds = shell_tree()
    try:
        return thread_wake(pause, fds)
    finally:
        end_tree(proc, fds)


def main() -> None:
    """Parse arguments, measure, print JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100, help="tries of each figure")
    parser.add_argument("--hog", type=int, default=2, help="busy processes pinned to cores")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    figures: dict[str, list[float]] = {
        "kill_sleep_ms": [],
        "term_tree_ms": [],
        "thread_wake_ms": [],
        "stop_chain_ms": [],
    }
    steps = (kill_sleep, term_tree, thread_wake, stop_chain)
    hogs = start_hogs(args.hog)
    try:
        load_before = os.getloadavg()[0]
        for _ in range(args.runs):
            for name, step in zip(figures, steps, strict=True):
                figures[name].append(step(rng.uniform(0.02, 0.1)))
        load_after = os.getloadavg()[0]
    finally:
        stop_hogs(hogs)
    head = {"bench": "kill_floor", "runs": args.runs, "hog": args.hog}
    load = {"load_1min": [round(load_before, 2), round(load_after, 2)]}
    print(json.dumps({**head, **load, **{k: percentiles(v) for k, v in figures.items()}}, indent=2))


if __name__ == "__main__":
    main()
