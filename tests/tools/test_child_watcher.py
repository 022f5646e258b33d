"""Subprocess children are reaped by the loop that started them: no waitpid thread, no zombie."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import random
import sys
import threading
from pathlib import Path

import pytest

from agent import child_watcher
from tests.support import poll_until

pytestmark = pytest.mark.skipif(
    sys.version_info >= (3, 12) or not hasattr(os, "pidfd_open"),
    reason="Python 3.12+ reaps children through pidfds itself",
)


def _waitpid_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("asyncio-waitpid")]


def _gone(pid: int) -> bool:
    """The process is reaped (a zombie still has its /proc entry)."""
    return not Path(f"/proc/{pid}").exists()


def test_a_child_is_reaped_without_a_thread() -> None:
    child_watcher.install()
    seen: list[list[str]] = []

    async def main() -> int:
        proc = await asyncio.create_subprocess_exec(
            "cat", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.DEVNULL
        )
        seen.append(_waitpid_threads())  # the child runs, blocked on its stdin
        assert proc.stdin is not None
        proc.stdin.close()
        return await proc.wait()

    assert asyncio.run(main()) == 0
    assert seen == [[]]


def test_exit_codes_reach_loops_on_many_threads() -> None:
    child_watcher.install()
    rng = random.Random(7)
    codes = [[rng.randrange(0, 5) for _ in range(4)] for _ in range(6)]
    results: list[list[int]] = [[] for _ in codes]
    start = threading.Barrier(len(codes))

    def worker(index: int) -> None:
        async def main() -> list[int]:
            procs = [
                await asyncio.create_subprocess_exec("sh", "-c", f"exit {code}")
                for code in codes[index]
            ]
            return [await proc.wait() for proc in procs]

        start.wait()
        results[index] = asyncio.run(main())

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(codes))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert results == codes


def test_a_child_left_by_a_closed_loop_is_reaped_when_it_exits() -> None:
    child_watcher.install()
    read_end, write_end = os.pipe()
    pids: list[int] = []

    def worker() -> None:
        async def main() -> None:
            proc = await asyncio.create_subprocess_exec("sh", "-c", "read x", stdin=read_end)
            pids.append(proc.pid)  # the loop ends without waiting for it

        asyncio.run(main())

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join(30)
    os.close(read_end)
    (pid,) = pids
    gc.collect()  # the loop is collected: its child is handed to a reaper
    with contextlib.suppress(BrokenPipeError):  # it may have ended already: reaped all the same
        os.write(write_end, b"\n")  # now the child exits
    os.close(write_end)
    assert poll_until(lambda: _gone(pid), timeout=20)


def test_a_loop_collected_while_its_thread_holds_the_watcher_s_lock_does_not_deadlock() -> None:
    # The collector runs finalizers at any allocation, also inside the watcher's own critical
    # section: the orphans' reaping must not wait there for the lock its thread holds.
    watcher = child_watcher.LoopPidfdWatcher()
    done = threading.Event()

    def collect_inside_the_lock() -> None:
        with watcher._lock:
            child_watcher._reap_orphans(watcher)  # as a finalizer would, mid-section
        done.set()

    thread = threading.Thread(target=collect_inside_the_lock, daemon=True)
    thread.start()
    assert done.wait(10), "the finalizer waited for a lock its own thread held"
