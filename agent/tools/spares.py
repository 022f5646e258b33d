"""Spare keepers: a ``shell`` call's keeper and guard, started before the call needs them.

Starting the keeper (:mod:`agent.guard`) is starting an interpreter: tens of milliseconds,
more on busy cores, and a burst of CPU that the scheduler makes the new session pay back
(a command stopped soon after its start waited for the keeper to be let run again). A
:class:`SparePool` starts one keeper ahead of need, with ``--spare``: its guard has forked
the command's process already, which waits for the command on a pipe. :func:`attach` hands it
the command (argv, working directory, environment: :func:`agent.guard.spec_bytes`) and the
call's loop takes over its output and status pipes and reaps the keeper through a pidfd;
the pool starts the next spare meanwhile (after a stopped call, a moment later: not beside the
rest of the stop). A call that finds none ready asks the pool for one now
(:meth:`SparePool.take_or_start`) rather than starting a keeper itself. A stopped call does
not wait for its keeper to exit: the pool reaps it (``Child.detach``; at its next start, at
its close at the latest).

The guarantee is the keeper's, unchanged: a spare's keeper, guard and waiting process form
the same tree as a keeper started for the call. The spares are started on the pool's own
thread, which lives until :meth:`SparePool.close`: the keeper's parent-death signal follows
the thread that started it, so a spare outlives neither that thread nor desk (desk killed:
the kernel's SIGTERM ends it). :meth:`SparePool.close` (the gateway's shutdown) ends the
thread, so every keeper it started ends its tree, and reaps them all.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import select
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from agent import guard as _guard
from agent.tools.shell_spawn import READ_CHUNK, Child, StatusProtocol

_log = logging.getLogger(__name__)

CLOSE_WAIT_S = 5.0
"""Seconds :meth:`SparePool.close` waits for the keepers it started to exit."""


@dataclass(slots=True)
class Spare:
    """One started keeper waiting for its command: the process and desk's pipe ends (fds)."""

    popen: subprocess.Popen[bytes]
    control: int
    """Write end of the pipe the command is read from."""
    stdout: int
    """Read end of the command's output (stdout and stderr)."""
    status: int
    """Read end of the status pipe (:mod:`agent.guard`)."""
    command_pid: int = 0
    """The pid the command will have (the guard's ``pid`` line, read once the tree is up)."""
    guard_pid: int = 0
    """The guard's pid (its ``guard`` line, written with the ``pid`` one)."""

    def discard(self) -> None:
        """Close desk's ends: the waiting process reads no command and exits, and so do
        the guard and the keeper (to be reaped by the pool)."""
        for fd in (self.control, self.stdout, self.status):
            with contextlib.suppress(OSError):
                os.close(fd)


class SparePool:
    """At most one spare keeper, started on its own thread by :meth:`warm`.

    Args:
        grace_s: the keepers' grace between SIGTERM and SIGKILL, seconds (a call with
            another grace starts its keeper itself).
        name: the thread's name.
    """

    def __init__(self, grace_s: float, name: str = "desk-shell-spares") -> None:
        self.grace_s = grace_s
        self._cond = threading.Condition()
        self._ready: list[Spare] = []
        self._started: list[subprocess.Popen[bytes]] = []
        self._due: float | None = None
        """``time.monotonic()`` when the next spare is to be started (None: none asked)."""
        self._starting = False
        self._waiters: list[Callable[[], None]] = []
        self._closed = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def take(self) -> Spare | None:
        """The spare keeper, if one is ready (its guard has forked the process that waits for
        the command; None: start one yourself). Thread-safe.

        The next one is started by :meth:`warm` (after the call: an interpreter starting
        while the command runs would take the CPU a stop needs)."""
        with self._cond:
            if self._closed or not self._ready:
                return None
            return self._ready.pop()

    def ready(self) -> list[int]:
        """The keeper pids of the spares ready now (at most one)."""
        with self._cond:
            return [spare.popen.pid for spare in self._ready]

    def wait_ready(self, timeout_s: float) -> bool:
        """Wait (bounded, seconds) until a spare is ready; True when one is."""
        with self._cond:
            return self._cond.wait_for(lambda: bool(self._ready) or self._closed, timeout_s) and (
                bool(self._ready)
            )

    def warm(self, delay_s: float = 0.0) -> None:
        """Start a spare if none is ready or being started (e.g. as a turn begins): now, or
        ``delay_s`` seconds from now (after a stop: an interpreter starting takes the CPU the
        rest of the stop needs); an earlier ask wins."""
        with self._cond:
            if not self._closed and not self._ready and not self._starting:
                due = time.monotonic() + max(0.0, delay_s)
                self._due = due if self._due is None else min(self._due, due)
                self._cond.notify()

    def close(self, timeout_s: float = CLOSE_WAIT_S) -> int:
        """End the thread (every keeper it started gets its parent-death SIGTERM and ends its
        tree) and reap them, bounded by ``timeout_s``. Idempotent.

        Returns:
            how many keepers were still running when the wait gave up (0 normally).
        """
        with self._cond:
            self._closed = True
            ready, self._ready = self._ready, []
            self._cond.notify()
        for spare in ready:
            spare.discard()
        self._thread.join(timeout_s)
        self._tell()
        left = 0
        with self._cond:
            started = list(self._started)
        for popen in started:
            try:
                popen.wait(timeout_s)
            except subprocess.TimeoutExpired:
                left += 1
        return left

    def request(self, done: Callable[[], None]) -> None:
        """Have a spare started now (unless one is ready or being started) and call ``done``
        once one is ready, or it could not be started, or the pool closed: on the pool's thread,
        or here at once when one is ready already. For a call that found none ready: started by
        the pool's thread, it outlives the call's (its parent-death signal), and the pool reaps
        it, so a stopped call need not wait for it (:attr:`~agent.tools.shell_spawn.Child.detach`).
        """
        with self._cond:
            now = self._closed or bool(self._ready)
            if not now:
                self._waiters.append(done)
                if not self._starting:
                    self._due = time.monotonic()
                    self._cond.notify()
        if now:
            done()

    async def take_or_start(self, timeout_s: float) -> Spare | None:
        """A spare for a call on the running loop: the one ready (:meth:`take`), else one the
        pool starts now (:meth:`request`), waited for at most ``timeout_s`` seconds; None
        when none could be had (start one yourself)."""
        spare = self.take()
        if spare is not None:
            return spare
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()

        def set_ready() -> None:
            if not ready.done():
                ready.set_result(None)

        def done() -> None:
            with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits any more
                loop.call_soon_threadsafe(set_ready)

        self.request(done)
        await asyncio.wait({ready}, timeout=timeout_s)
        return self.take()

    def _tell(self) -> None:
        """Call the waiters of :meth:`request` (outside the lock)."""
        with self._cond:
            waiters, self._waiters = self._waiters, []
        for done in waiters:
            done()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._closed:
                    if self._due is None:
                        self._cond.wait()
                        continue
                    left = self._due - time.monotonic()
                    if left <= 0:
                        break
                    self._cond.wait(left)
                if self._closed:
                    return
                self._due = None
                self._starting = True
            try:
                spare = self._start()
            except OSError:
                if not self._closed:
                    _log.exception("a spare keeper could not be started")
                with self._cond:
                    self._starting = False
                self._tell()
                continue
            with self._cond:
                self._starting = False
                kept = not self._closed
                if kept:
                    self._ready.append(spare)
                    self._cond.notify_all()
            self._tell()
            if not kept:
                spare.discard()

    def _start(self) -> Spare:
        """Start one keeper with ``--spare`` (on this thread: its parent-death signal)."""
        status_r, status_w = os.pipe()
        stdout_r, stdout_w = os.pipe()
        control_r, control_w = os.pipe()
        try:
            popen = subprocess.Popen(
                [*_guard.command_line(os.getpid(), self.grace_s, status_w, spare_fd=control_r)],
                stdin=subprocess.DEVNULL,
                stdout=stdout_w,
                stderr=subprocess.STDOUT,
                pass_fds=(status_w, control_r),
                start_new_session=True,
            )
        except BaseException:
            for fd in (status_r, stdout_r, control_w):
                os.close(fd)
            raise
        finally:
            for fd in (status_w, stdout_w, control_r):
                os.close(fd)
        with self._cond:  # reap what exited (a stopped call's keeper is left to the pool)
            self._started = [p for p in self._started if p.poll() is None]
            self._started.append(popen)
        spare = Spare(popen, control_w, stdout_r, status_r)
        try:
            spare.guard_pid, spare.command_pid = self._pid_lines(status_r)
        except OSError:
            spare.discard()
            raise
        os.set_blocking(status_r, False)
        return spare

    def _pid_lines(self, status: int) -> tuple[int, int]:
        """Wait for the guard's ``guard <g>`` and ``pid <n>`` lines (the tree is up) and
        return ``(g, n)``.

        Raises:
            OSError: the keeper ended first, or the pool was closed meanwhile.
        """
        poller = select.poll()
        poller.register(status, select.POLLIN)
        found: dict[str, int] = {}
        line = b""
        while "pid" not in found:
            if self._closed:
                raise OSError("the spare pool was closed")
            if not poller.poll(50):
                continue
            chunk = os.read(status, 1)  # one byte at a time: nothing after the lines is taken
            if not chunk:
                raise OSError("the spare keeper ended before its guard started")
            line += chunk
            if not line.endswith(b"\n"):
                continue
            word, _, value = line.decode("ascii", "replace").strip().partition(" ")
            if word not in ("guard", "pid") or not value.isdigit():
                raise OSError(f"the spare keeper said {line!r}")
            found[word] = int(value)
            line = b""
        return found.get("guard", 0), found["pid"]


async def attach(spare: Spare, argv: list[str], cwd: Path, env: Mapping[str, str]) -> Child:
    """Give ``spare`` its command and take its pipes and its keeper onto the running loop.

    Returns:
        the started command, as :func:`agent.tools.shell_spawn.spawn` returns it.

    Raises:
        OSError: the pipes could not be set up (the spare is discarded then).
    """
    loop = asyncio.get_running_loop()
    popen = spare.popen
    try:
        pidfd = os.pidfd_open(popen.pid)
        reader = asyncio.StreamReader(limit=READ_CHUNK, loop=loop)
        pipe, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader, loop=loop),
            os.fdopen(spare.stdout, "rb", buffering=0, closefd=True),
        )
    except BaseException:
        spare.discard()
        raise
    protocol = StatusProtocol(loop, spare.status)
    protocol.command_pid = spare.command_pid  # the guard's first lines, read by the pool
    protocol.guard_pid = spare.guard_pid or None
    protocol.started.set_result(None)

    def reaped() -> None:
        loop.remove_reader(pidfd)
        os.close(pidfd)
        protocol.keeper_exited(popen.wait())

    loop.add_reader(pidfd, reaped)

    def detach() -> bool:
        if protocol.reaped.done():
            return False
        loop.remove_reader(pidfd)
        os.close(pidfd)
        return True  # the pool reaps it: ``_start`` prunes, ``close`` waits

    spec = _guard.spec_bytes(argv, str(cwd), dict(env))
    try:
        view = memoryview(spec)
        while view:
            view = view[os.write(spare.control, view) :]
    except OSError:
        pass  # the keeper is gone: its exit is reported as the command's
    finally:
        os.close(spare.control)
    return Child(
        popen.pid,
        reader,
        protocol.exited,
        protocol.reaped,
        protocol,
        _signaller(popen),
        pipe.close,
        detach,
    )


def _signaller(popen: subprocess.Popen[bytes]) -> Callable[[int], None]:
    def send(sig: int) -> None:
        if popen.returncode is not None:
            raise ProcessLookupError(popen.pid)
        os.kill(popen.pid, sig)  # not reaped yet (only ``reaped`` reaps it): not recycled

    return send


__all__ = ["CLOSE_WAIT_S", "Spare", "SparePool", "attach"]
