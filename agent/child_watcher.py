"""Children of asyncio subprocesses reaped by the loop that started them, without a thread each.

Python 3.11's default child watcher (``ThreadedChildWatcher``) starts one ``asyncio-waitpid-N``
thread per child, which blocks in ``waitpid`` until the child is gone and lives on for a moment
after the loop learned of the exit. desk runs each tool and MCP server on worker threads with
loops of their own and promises that no thread outlives the work: a waitpid thread still
finishing when the gateway reports "no thread left" makes that report a lie now and then.

:class:`LoopPidfdWatcher` watches a pid file descriptor on the running loop instead (as Python
3.12's watcher does): the child's exit is a readable pidfd, reaped in the loop's own callback,
no thread at all. A loop that closes while one of its children still runs (a worker that gave up
waiting) hands the child to one short-lived reaper thread, so nothing is left a zombie.

:func:`install` puts it in place once per process (Python < 3.12 on Linux; elsewhere the
interpreter's own watcher is kept).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import threading
import weakref
from collections.abc import Callable
from typing import Any, TypeVarTuple

_log = logging.getLogger(__name__)

_installed = False
_install_lock = threading.Lock()
_Ts = TypeVarTuple("_Ts")


class LoopPidfdWatcher(asyncio.AbstractChildWatcher):
    """A child watcher that reaps each child on the loop that started it, through a pidfd.

    Safe for many loops on many threads at once: each child is watched by the running loop of
    the thread that called :meth:`add_child_handler` (asyncio calls it from
    ``subprocess_exec``, on that loop).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._children: dict[int, tuple[weakref.ref[asyncio.AbstractEventLoop], int]] = {}
        """pid -> (its loop, weakly: a closed loop must be collectable; its pidfd)."""
        self._loops: weakref.WeakSet[asyncio.AbstractEventLoop] = weakref.WeakSet()

    def add_child_handler(
        self, pid: int, callback: Callable[[int, int, *_Ts], object], *args: *_Ts
    ) -> None:
        """Call ``callback(pid, returncode, *args)`` on the running loop once ``pid`` exits.

        Raises:
            RuntimeError: when called outside a running loop.
            OSError: when ``pid`` is not a child of this process (``pidfd_open`` fails).
        """
        loop = asyncio.get_running_loop()
        pidfd = os.pidfd_open(pid)
        with self._lock:
            self._children[pid] = (weakref.ref(loop), pidfd)
            if loop not in self._loops:
                self._loops.add(loop)
                weakref.finalize(loop, _reap_orphans, self)
        loop.add_reader(pidfd, self._reap, pid, callback, args)

    def _reap(self, pid: int, callback: Callable[..., object], args: tuple[Any, ...]) -> None:
        with self._lock:
            entry = self._children.pop(pid, None)
        if entry is None:
            return
        loop, pidfd = entry[0](), entry[1]
        if loop is not None:
            loop.remove_reader(pidfd)
        os.close(pidfd)
        callback(pid, _wait(pid), *args)

    def remove_child_handler(self, pid: int) -> bool:
        """Stop watching ``pid`` (its exit is then not reported); False when it was not watched."""
        with self._lock:
            entry = self._children.pop(pid, None)
        if entry is None:
            return False
        loop, pidfd = entry[0](), entry[1]
        if loop is not None and not loop.is_closed():
            loop.remove_reader(pidfd)
        os.close(pidfd)
        return True

    def orphans(self) -> list[int]:
        """Forget the children of loops that are gone (collected); their pids."""
        with self._lock:
            pids = [pid for pid, (loop, _) in self._children.items() if loop() is None]
            entries = [self._children.pop(pid) for pid in pids]
        for _loop, pidfd in entries:
            os.close(pidfd)
        return pids

    def attach_loop(self, loop: asyncio.AbstractEventLoop | None) -> None:
        """Nothing to do: each child is watched by the loop that started it."""

    def is_active(self) -> bool:
        """Always ready (no loop has to be attached)."""
        return True

    def close(self) -> None:
        """Nothing to release: pidfds are closed as children are reaped."""

    def __enter__(self) -> LoopPidfdWatcher:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def _wait(pid: int) -> int:
    """The exit code of an exited child (255 when someone else reaped it first)."""
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:
        _log.warning("child process %d was reaped elsewhere: its exit code is lost", pid)
        return 255
    return os.waitstatus_to_exitcode(status)


def _reap_orphans(watcher: LoopPidfdWatcher) -> None:
    """A loop was collected: reap the children it left, on one daemon thread.

    This runs inside the garbage collector, which may run on any thread at any allocation,
    including one that holds the watcher's lock (in :meth:`LoopPidfdWatcher.add_child_handler`):
    waiting for the lock here would deadlock that thread, and every later child of the process
    would wait behind it. So the lock is only tried; when it is held, the thread takes it.
    """
    if watcher._lock.acquire(blocking=False):
        watcher._lock.release()
        pids = watcher.orphans()
        if not pids:
            return
        target = lambda: [_wait(pid) for pid in pids]  # noqa: E731
    else:
        target = lambda: [_wait(pid) for pid in watcher.orphans()]  # noqa: E731
    threading.Thread(target=target, name="desk-reap-orphans", daemon=True).start()


def install() -> None:
    """Make :class:`LoopPidfdWatcher` asyncio's child watcher (once; Python < 3.12, Linux)."""
    global _installed
    if _installed or sys.version_info >= (3, 12) or not hasattr(os, "pidfd_open"):
        return
    with _install_lock:
        if _installed:
            return
        with contextlib.suppress(OSError):  # a kernel without pidfds keeps the default watcher
            os.close(os.pidfd_open(os.getpid()))
            asyncio.set_child_watcher(LoopPidfdWatcher())
        _installed = True


__all__ = ["LoopPidfdWatcher", "install"]
