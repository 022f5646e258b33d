"""Processes that try to outlive desk, and a stand-in for desk that runs them for real.

Each escape is a command that starts a process trying to survive (``setsid`` and SIGTERM
ignored, a double fork, killing its guard, an MCP server's ``setsid`` child) and writes that
process's pid, one a line, to ``PIDS``. The stand-in (``python -m tests.tools.escapekit KIND
GRACE_S COMMAND``, run in a child interpreter) is desk's own code path: ``shell`` runs the
command with the real :class:`agent.tools.ShellTool`, ``mcp`` opens it as a stdio MCP server
through the real transport (:func:`agent.mcp.transport.open_streams`, the SDK's client, the
guard). It prints ``started`` once the call runs, and quits (a stop, then a normal exit, as a
quit does) when a line arrives on its stdin; the test may SIGKILL it instead.

:func:`try_escape` runs one try and returns the pids still running after the deadline: the
escapees and every descendant the stand-in had when it was ended (keeper, guard, command).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

from agent.guard import descendants
from tests.support import poll_until

ROOT = Path(__file__).resolve().parents[2]

HOLD_SCRIPT = "trap '' TERM\necho $$ >> PIDS\nexec sleep 1000\n"
"""A process that ignores SIGTERM and records its pid (``sleep`` inherits the ignored TERM);
written to ``HOLD`` beside the pid file."""

ESCAPES: dict[str, tuple[str, str]] = {
    "setsid-term-ignored": ("shell", "setsid sh HOLD & sleep 1000"),
    "double-fork": ("shell", "(setsid sh -c 'sh HOLD & exit 0' &)"),
    "kill-guard": (
        "shell",
        "setsid sh HOLD & while [ ! -s PIDS ]; do sleep 0.01; done; kill -9 $PPID; sleep 1000",
    ),
    "mcp-setsid-child": ("mcp", "setsid sh HOLD & exec cat"),
    "spare-setsid-term-ignored": ("spare", "setsid sh HOLD & sleep 1000"),
    "spare-double-fork": ("spare", "(setsid sh -c 'sh HOLD & exit 0' &)"),
    "spare-kill-guard": (
        "spare",
        "setsid sh HOLD & while [ ! -s PIDS ]; do sleep 0.01; done; kill -9 $PPID; sleep 1000",
    ),
}
"""Escape name -> (how desk runs it, the command); ``PIDS`` and ``HOLD`` are replaced by the
pid file and the script's path. ``spare``: the shell tool runs the command under a spare
keeper (:mod:`agent.tools.spares`, started before the call), and a second spare waits unused
when desk quits or is killed."""


_SIGNALS = {"kill": signal.SIGKILL, "term": signal.SIGTERM, "hup": signal.SIGHUP}


def _pidfds(pids: set[int]) -> dict[int, int]:
    fds: dict[int, int] = {}
    for pid in pids:
        try:
            fds[pid] = os.pidfd_open(pid)
        except ProcessLookupError:
            continue
    return fds


def _wait_gone(fds: dict[int, int], deadline_s: float) -> set[int]:
    """Wait until every pidfd says its process exited; the pids still running at the end."""
    pending = dict(fds)
    end = time.monotonic() + deadline_s
    while pending and time.monotonic() < end:
        ready, _, _ = select.select(list(pending.values()), [], [], end - time.monotonic())
        for pid in [p for p, fd in pending.items() if fd in ready]:
            del pending[pid]
    return set(pending)


class _StandIn:
    """The stand-in for desk: a child interpreter, or (``fork=True``, for long loops) a fork of
    this process, which must then have no other thread."""

    def __init__(self, kind: str, grace_s: float, command: str, *, fork: bool) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        if not fork:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "tests.tools.escapekit", kind, str(grace_s), command],
                cwd=ROOT,
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
            )
            assert self._proc.stdin is not None
            self._quit = self._proc.stdin.fileno()
            self.pid = self._proc.pid
            return
        read_end, self._quit = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # the stand-in: never returns into the caller
            code = 1
            try:
                os.dup2(read_end, 0)
                null = os.open(os.devnull, os.O_WRONLY)
                os.dup2(null, 1)
                run(kind, grace_s, command)
                code = 0
            finally:
                os._exit(code)
        os.close(read_end)
        self._status: int | None = None

    def running(self) -> bool:
        if self._proc is not None:
            return self._proc.poll() is None
        if self._status is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self._status = status
        return self._status is None

    def quit(self) -> None:
        os.write(self._quit, b"quit\n")

    def kill(self, sig: signal.Signals = signal.SIGKILL) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, sig)

    def wait(self) -> None:
        if self._proc is not None:
            self._proc.wait()
        elif self._status is None:
            self._status = os.waitpid(self.pid, 0)[1]

    def close(self) -> None:
        if self.running():
            self.kill()
        self.wait()
        if self._proc is not None and self._proc.stdin is not None:
            self._proc.stdin.close()
        else:
            os.close(self._quit)


def try_escape(
    name: str,
    ending: str,
    tmp: Path,
    *,
    grace_s: float = 0.3,
    deadline_s: float = 30.0,
    fork: bool = False,
) -> set[int]:
    """One try: start the escape under the stand-in, end the stand-in, wait for every process.

    Args:
        name: a key of :data:`ESCAPES`.
        ending: ``"quit"`` (a line on its stdin), ``"kill"`` (SIGKILL), ``"term"`` or ``"hup"``
            (SIGTERM, SIGHUP: the stand-in has no handler for them and dies of them).
        tmp: a fresh folder for the pid file.
        grace_s: the guard's grace between SIGTERM and SIGKILL.
        deadline_s: how long each wait may take.
        fork: fork this process for the stand-in instead of starting an interpreter (faster;
            this process must have no other thread).

    Returns:
        the pids still running after ``deadline_s``: empty when nothing escaped.

    Raises:
        AssertionError: when the escape did not start (no pid written in time).
    """
    kind, command = ESCAPES[name]
    pids_file = tmp / "pids"
    hold = tmp / "hold.sh"
    hold.write_text(HOLD_SCRIPT.replace("PIDS", str(pids_file)))
    command = command.replace("PIDS", str(pids_file)).replace("HOLD", str(hold))
    stand_in = _StandIn(kind, grace_s, command, fork=fork)
    fds: dict[int, int] = {}
    try:

        def written() -> bool:
            assert stand_in.running(), f"{name}: the stand-in ended first"
            return pids_file.exists() and pids_file.read_text().endswith("\n")

        assert poll_until(written, deadline_s, every_s=0.01), f"{name}: the escapee wrote no pid"
        escapees = {int(line) for line in pids_file.read_text().split()}
        fds = _pidfds(escapees | set(descendants(stand_in.pid)))
        if ending == "quit":
            stand_in.quit()
        else:
            stand_in.kill(_SIGNALS[ending])
        stand_in.wait()
        return _wait_gone(fds, deadline_s)
    finally:
        for fd in fds.values():
            os.close(fd)
        stand_in.close()


async def _quit_requested() -> None:
    loop = asyncio.get_running_loop()
    asked = asyncio.Event()
    loop.add_reader(0, asked.set)
    await asked.wait()
    loop.remove_reader(0)


async def _shell(grace_s: float, command: str) -> None:
    from agent.tools import ProcessLedger, ShellTool, ToolContext

    ctx = ToolContext(cwd=Path.cwd(), on_output=lambda _text: None, ledger=ProcessLedger())
    call = asyncio.create_task(ShellTool(grace_s=grace_s).run({"command": command}, ctx))
    print("started", flush=True)
    await _quit_requested()
    call.cancel()  # the quit stops the turn's call
    await asyncio.gather(call, return_exceptions=True)


async def _spare(grace_s: float, command: str) -> None:
    from agent.tools import ProcessLedger, ShellTool, ToolContext
    from agent.tools.spares import SparePool

    spares = SparePool(grace_s)
    try:
        spares.warm()
        assert spares.wait_ready(30.0), "no spare keeper started"
        ctx = ToolContext(cwd=Path.cwd(), on_output=lambda _text: None, ledger=ProcessLedger())
        tool = ShellTool(grace_s=grace_s, spares=spares)
        call = asyncio.create_task(tool.run({"command": command}, ctx))
        while spares.ready():  # until the call took it
            await asyncio.sleep(0.005)
        spares.warm()  # as the next request of the turn does
        assert await asyncio.to_thread(spares.wait_ready, 30.0), "no second spare started"
        print("started", flush=True)
        await _quit_requested()
        call.cancel()  # the quit stops the turn's call, then the gateway closes the spares
        await asyncio.gather(call, return_exceptions=True)
    finally:
        spares.close()


async def _mcp(grace_s: float, line: str) -> None:
    from dataclasses import dataclass, field

    from agent.mcp.transport import StderrTail, open_streams

    @dataclass
    class Spec:
        name: str = "escape"
        command: str | None = "/bin/sh"
        args: tuple[str, ...] = ("-c", line)
        env: dict[str, str] = field(default_factory=lambda: {"PATH": os.environ["PATH"]})
        url: str | None = None
        headers: dict[str, str] = field(default_factory=dict)
        startup_timeout_s: float = 60.0
        tool_timeout_s: float = 60.0
        max_result_mb: float = 50.0

    stderr = StderrTail()
    try:
        async with open_streams(Spec(), cwd=Path.cwd(), stderr=stderr, grace_s=grace_s):
            print("started", flush=True)
            await _quit_requested()  # leaving the block is the SDK's shutdown of the server
    finally:
        stderr.close()


def run(kind: str, grace_s: float, command: str) -> None:
    """Run ``command`` as desk would (``kind``: ``shell``, ``spare`` or ``mcp``) until a line
    arrives on stdin."""
    runner = {"shell": _shell, "spare": _spare, "mcp": _mcp}[kind]
    asyncio.run(runner(grace_s, command))


if __name__ == "__main__":
    run(sys.argv[1], float(sys.argv[2]), sys.argv[3])
