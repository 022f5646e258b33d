"""Starting a ``shell`` command under the keeper and the guard, and reading what they report.

:func:`spawn` starts ``/bin/sh -c command`` (in bubblewrap under :mod:`agent.sandbox_init` when
sandboxed) behind the keeper and the guard (:mod:`agent.guard`) in a new session, with a status
pipe; :class:`StatusProtocol` reads the guard's and the keeper's lines from it (``pid``,
``exit``, ``killed``, ``ended``) as futures, beside asyncio's own stdout stream. How a run uses
them (draining, ending, the result) is :mod:`agent.tools.shell`'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from agent import child_watcher, sandbox_init
from agent import guard as _guard
from agent.stamps import stamp
from agent.tools.sandbox import Sandbox

READ_CHUNK = 65_536
"""Bytes read from the command's output at a time."""

NON_INTERACTIVE_ENV: Mapping[str, str] = {"PAGER": "cat", "GIT_PAGER": "cat", "GIT_EDITOR": "true"}
"""Variables set for every command so that none waits for a pager or an editor."""


class StatusProtocol(asyncio.subprocess.SubprocessStreamProtocol):
    """asyncio's stream protocol plus ``exited`` (the command's status) and ``reaped`` futures.

    ``asyncio.subprocess.Process.wait()`` (Python 3.11) returns only once the output pipe is
    closed too, which never happens while a background grandchild holds it; the command's own
    exit is what the tool must see. The guard writes its own pid and the shell's (``guard <g>``,
    ``pid <n>``), then the shell's exit on the status pipe (``exit <code>``)
    and lingers while the command's leftovers run; ``exited`` takes the code from there, or
    the guard's own status if it ended without saying (``reaped`` is its exit).
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, status_fd: int) -> None:
        super().__init__(limit=READ_CHUNK, loop=loop)
        self.exited: asyncio.Future[int] = loop.create_future()
        self.reaped: asyncio.Future[int] = loop.create_future()
        self.started: asyncio.Future[None] = loop.create_future()
        self.ending: asyncio.Future[tuple[int, int, tuple[str, ...], float]] = loop.create_future()
        """The keeper's count once it ended the tree: ``(ended, survivors, signals, gone_at)``."""
        self.guard_killed = False
        """True when the guard was killed (the keeper said ``killed``, not ``exit``)."""
        self.transport: asyncio.SubprocessTransport | None = None
        self._loop = loop
        self._status_fd: int | None = status_fd
        self._status = b""
        self.command_pid: int | None = None
        """The shell's pid, from the guard's ``pid`` status line."""
        self.guard_pid: int | None = None
        """The guard's pid, from its ``guard`` line (written with the ``pid`` one)."""
        loop.add_reader(status_fd, self._read_status)

    def _read_status(self) -> None:
        assert self._status_fd is not None
        try:
            data = os.read(self._status_fd, 64)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        *lines, self._status = (self._status + data).split(b"\n")
        for raw in lines:
            word, _, value = raw.decode("ascii", "replace").partition(" ")
            with contextlib.suppress(ValueError):
                if word == "guard":
                    self.guard_pid = int(value)
                elif word == "pid":
                    stamp("shell.pid_seen")
                    self.command_pid = int(value)
                    if not self.started.done():
                        self.started.set_result(None)
                elif word in ("exit", "killed") and not self.exited.done():
                    self.guard_killed = word == "killed"
                    self.exited.set_result(int(value))
                elif word == "ended" and not self.ending.done():
                    self.ending.set_result(_ending(value))
        if not data or len(self._status) > 256:
            self.close_status()

    def close_status(self) -> None:
        """Stop reading the status pipe and close it (idempotent)."""
        if self._status_fd is None:
            return
        self._loop.remove_reader(self._status_fd)
        os.close(self._status_fd)
        self._status_fd = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        assert isinstance(transport, asyncio.SubprocessTransport)
        self.transport = transport

    def process_exited(self) -> None:
        super().process_exited()
        assert self.transport is not None
        code = self.transport.get_returncode()
        self.keeper_exited(code if code is not None else -1)

    def keeper_exited(self, code: int) -> None:
        """The keeper was reaped with ``code``: read its last words, resolve the futures."""
        if self._status_fd is not None:
            self._read_status()  # the guard's last words, if it wrote them
        self.close_status()
        if not self.exited.done():
            self.exited.set_result(code)
        if not self.reaped.done():
            self.reaped.set_result(code)


def _ending(value: str) -> tuple[int, int, tuple[str, ...], float]:
    """``"N SURVIVORS SIGNALS GONE_AT"`` (the keeper's ``ended`` line) as a tuple."""
    ended, survivors, signals, gone_at = value.split()
    names = () if signals == "-" else tuple(signals.split(","))
    return int(ended), int(survivors), names, float(gone_at)


@dataclass(slots=True)
class Child:
    """A started keeper and command: the keeper's pid, output, futures, and how to signal
    the keeper and release it (asyncio's transport, or a spare's own: ``agent.tools.spares``).
    """

    pid: int
    stdout: asyncio.StreamReader
    exited: asyncio.Future[int]
    reaped: asyncio.Future[int]
    protocol: StatusProtocol
    signal_keeper: Callable[[int], None]
    """Send a signal to the keeper (raises ProcessLookupError once it is gone)."""
    release: Callable[[], None]
    """Release the pipes (see :meth:`close`)."""
    detach: Callable[[], bool] | None = None
    """Stop watching the keeper on this loop and leave its reaping to whoever started it (a
    spare's pool: :meth:`agent.tools.spares.SparePool.close` reaps it at the latest); True
    when done, False when it was reaped already. None: the keeper is reaped on the loop only
    (asyncio's watcher), so it must be waited for."""

    def close(self) -> None:
        """Release the pipes, and the keeper once it is reaped. This never signals a live
        group."""
        self.protocol.close_status()
        self.release()


def _transport_release(
    transport: asyncio.SubprocessTransport, reaped: asyncio.Future[int]
) -> Callable[[], None]:
    """Closing asyncio's transport once its child watcher has reaped the keeper (closing it
    first polls the process, which may reap it under the watcher, which then logs "Unknown
    child process" and loses the exit status)."""

    def release() -> None:
        stdout = transport.get_pipe_transport(1)
        if stdout is not None:
            stdout.close()
        if reaped.done():
            transport.close()
        else:
            reaped.add_done_callback(lambda _reaped: transport.close())

    return release


def command_env(extra_env: Mapping[str, str] | None) -> dict[str, str]:
    """A command's environment: desk's, :data:`NON_INTERACTIVE_ENV`, then ``extra_env``."""
    return {**os.environ, **NON_INTERACTIVE_ENV, **(extra_env or {})}


async def spawn(
    argv: list[str],
    cwd: Path,
    extra_env: Mapping[str, str] | None,
    grace_s: float,
    sandbox: Sandbox,
) -> Child:
    """Start ``argv`` (``/bin/sh -c command``) under the keeper, in a new session; in
    bubblewrap under :mod:`agent.sandbox_init` when ``sandbox`` is on (which writes the
    command's exit on a copy of the status pipe).

    This is ``asyncio.create_subprocess_exec`` of the keeper with the shell after it, plus a
    protocol that reports the shell's exit on its own (see :class:`StatusProtocol`). It must run on
    a thread that outlives the command: the keeper's parent-death signal follows the thread.

    Raises:
        OSError: when the keeper cannot be started (e.g. ``cwd`` is missing).
    """
    stamp("shell.spawn")
    child_watcher.install()
    loop = asyncio.get_running_loop()
    env = command_env(extra_env)
    status_read, status_write = os.pipe()
    os.set_blocking(status_read, False)
    inner = os.dup(status_write) if sandbox.on else None
    if inner is not None:
        init = sandbox_init.command_line(inner)
        argv = sandbox.wrap(argv, cwd, init, sandbox_init.needed_paths())
    wrapped = sandbox_init.WRAPPERS if inner is not None else 0
    try:
        transport, protocol = await loop.subprocess_exec(
            lambda: StatusProtocol(loop, status_read),
            *_guard.command_line(os.getpid(), grace_s, status_write, wrapped),
            *argv,
            start_new_session=True,
            pass_fds=(status_write,) if inner is None else (status_write, inner),
            cwd=cwd,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
    except BaseException:
        with contextlib.suppress(OSError):
            loop.remove_reader(status_read)
            os.close(status_read)
        raise
    finally:
        os.close(status_write)
        if inner is not None:
            os.close(inner)
    stamp("shell.spawned")
    assert protocol.stdout is not None
    return Child(
        transport.get_pid(),
        protocol.stdout,
        protocol.exited,
        protocol.reaped,
        protocol,
        transport.send_signal,
        _transport_release(transport, protocol.reaped),
    )


async def settle(spawn: asyncio.Future[Child]) -> Child | None:
    """Wait for a spawn to finish whatever further cancels arrive; None when it failed."""
    while not spawn.done():
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(spawn)
    if spawn.cancelled() or spawn.exception() is not None:
        return None
    return spawn.result()


__all__ = [
    "NON_INTERACTIVE_ENV",
    "READ_CHUNK",
    "Child",
    "StatusProtocol",
    "command_env",
    "settle",
    "spawn",
]
