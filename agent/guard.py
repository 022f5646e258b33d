"""The guard of a process desk starts: nothing the process starts outlives desk, or the guard.

A stdio MCP server and a ``shell`` tool's command are not started by desk itself but by this
file, run by path with the same interpreter
(``python -I -S guard.py PARENT_PID GRACE_S [--status-fd FD [--spare FD]] -- COMMAND...``),
which becomes two processes that watch each other::

    desk ── keeper ── guard ── command ── ... (every descendant, setsid'd or double-forked)

* The **keeper** is the process desk started (in a new session). It is a "child subreaper"
  (Linux ``prctl(PR_SET_CHILD_SUBREAPER)``), asks the kernel for SIGTERM when desk's thread
  that started it dies (``PR_SET_PDEATHSIG``), forks the guard and waits. It ends the tree.
* The **guard** leads the command's process group (its own, not the keeper's), is a child
  subreaper too, asks for SIGHUP when the keeper dies, forks the command and waits for it.

Every orphaned descendant is re-parented to the nearest living subreaper above it: the guard
while it lives, else the keeper. So every process the command ever started stays a descendant
of the keeper, found by walking ``/proc`` by parent pid, whatever it did: ``setsid``, a double
fork, ignoring SIGTERM. What ends the tree, and who:

* desk asks, by SIGTERM to the keeper (the MCP SDK sends it to the keeper's group; the
  ``shell`` tool ends the tree itself where it can, :mod:`agent.tools.tree_end`, and the guard
  and the keeper then exit, having nothing left); desk dies, even by SIGKILL: the keeper gets
  its parent-death SIGTERM; SIGHUP and SIGINT too: the **keeper** ends the tree;
* the command kills its guard (``kill -9 $PPID``) or its own group (``kill -9 0``, the keeper
  is not in it): the guard's orphans go to the keeper, which sees its child gone and ends the
  tree at once;
* someone kills the keeper: the **guard** gets its parent-death SIGHUP and ends its own tree
  (every orphan below the command is its own, it being a subreaper).

Only killing both at once (or ``kill -9 -1``) lets a process escape; a process can no more
leave its subreapers' tree than its ancestry.

How a tree is ended, and what is counted: :mod:`agent.guard_tree` (:func:`end_tree`).

With ``--status-fd FD`` (the ``shell`` tool) nothing is written on stderr (it is the command's
output there). The guard writes ``guard <g>`` (its own pid) and ``pid <n>`` (the command's pid)
on FD in one write, then the command's exit
status (``exit <code>``, negative for a signal, as ``subprocess`` reports it), and exits; the
keeper lingers, reaping, until its last descendant is gone (then exits 0 without a word) or it
is asked to end them, so desk can drain the output first. Each ending the keeper makes is
written on FD as ``ended <N> <SURVIVORS> <SIGNALS|-> <GONE_AT>`` (signals comma-separated,
``GONE_AT`` on ``time.monotonic()``'s clock, which is system-wide on Linux); when the guard was
killed the keeper writes ``killed <-signal>`` (in place of ``exit``) first.

With ``--spare FD`` too (a spare keeper, :mod:`agent.tools.spares`) nothing follows ``--``: the
keeper is started before the command is known, and the guard forks the command's process at
once (its ``pid`` line is written then), which waits for the command on FD: desk writes it
(:func:`spec_bytes`: argv, working directory, environment) and closes the pipe; the process
changes directory and becomes the command. A pipe closed without a command makes it exit 0,
and the keeper and the guard with it. The tree is the same as a keeper started for the command.

Without ``--status-fd`` (an MCP server) the guard's first stderr line is
``desk-mcp-guard: group <pgid>``; when the server exits by itself, the guard writes
``desk-mcp-guard: exit <code>`` or ``desk-mcp-guard: exit signal <NAME>`` and exits with the
server's status, and the keeper ends what the server left behind and exits with that status.

The file (and :mod:`agent.guard_tree`) imports the standard library only and runs with ``-I -S``
(:func:`command_line` imports it as a module, so its bytecode is cached and only the
interpreter's start is paid).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
from typing import NoReturn

if __name__ == "__main__" and not __package__:  # run by path: make ``agent`` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from agent.guard_tree import (  # noqa: E402
    ENDING_SIGNALS,
    KILL_WAIT_S,
    descendants,
    end_tree,
    only_children,
    stamp,
)

EXIT_MARK = "desk-mcp-guard: exit "
"""The start of the guard's last stderr line when the server exited by itself."""

GROUP_MARK = "desk-mcp-guard: group "
"""The start of the guard's first stderr line, which names the server's process group."""

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_PARENT_POLL_S = 0.5


_BOOT = (
    "import os, sys; sys.path.insert(0, {root!r}); from agent.guard import main; "
    "os._exit(main(sys.argv[1:]))"
)


def command_line(
    parent: int,
    grace_s: float,
    status_fd: int | None = None,
    wrapped: int = 0,
    spare_fd: int | None = None,
) -> list[str]:
    """The keeper's command line up to ``--`` (the command follows it).

    Args:
        parent: desk's pid (the keeper gives up at once if its parent is another).
        grace_s: seconds between SIGTERM and SIGKILL when the tree is ended.
        status_fd: the ``shell`` tool's status pipe (passed to the keeper), or None.
        wrapped: how many processes, each the only child of the one above, stand between the
            guard and the command (a sandbox's: :data:`agent.sandbox_init.WRAPPERS`); the
            keeper ends them last and does not count them.
        spare_fd: a pipe the command is read from (a spare keeper, started before it is
            needed: nothing follows ``--``); see :func:`spec_bytes`.
    """
    boot = _BOOT.format(root=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    line = [sys.executable, "-I", "-S", "-c", boot, str(parent), f"{grace_s:g}"]
    if status_fd is not None:
        line += ["--status-fd", str(status_fd)]
    if wrapped:
        line += ["--wrapped", str(wrapped)]
    if spare_fd is not None:
        line += ["--spare", str(spare_fd)]
    return [*line, "--"]


def spec_bytes(argv: list[str], cwd: str, env: dict[str, str]) -> bytes:
    """What desk writes on a spare keeper's pipe (then closes it): the command, its working
    directory and its whole environment, as JSON (lone surrogates escaped, so that names
    that are not UTF-8 reach ``execve`` as they were)."""
    return json.dumps({"argv": argv, "cwd": cwd, "env": env}).encode("ascii")


class _EndRequested(Exception):
    """Raised by the signal handler to leave a wait: the tree must be ended."""


_end_requested = False


def _on_signal(_signum: int, _frame: object) -> None:
    """Leave the wait once; a second signal before :func:`end_tree` ignores them is dropped.

    It may come: a keeper started by a thread other than desk's main one gets its parent-death
    SIGTERM as that thread exits and again as the main one does, and desk's own SIGTERM may
    come with either. Raised again inside the ``except`` that ends the tree, it would end the
    keeper with the tree left to the kernel's reaper."""
    global _end_requested
    if _end_requested:
        return
    _end_requested = True
    raise _EndRequested


def _prctl(option: int, value: int) -> bool:
    """``prctl(option, value)``; False where there is no such call or it failed."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes  # here: it costs start-up time and only Linux needs it

    libc = ctypes.CDLL(None, use_errno=True)
    return int(libc.prctl(option, value, 0, 0, 0)) == 0


def _write(fd: int, text: str) -> None:
    with contextlib.suppress(OSError):
        os.write(fd, text.encode())


def _ending_line(ending: tuple[int, int, tuple[str, ...], float]) -> str:
    ended, survivors, signals, gone_at = ending
    return f"ended {ended} {survivors} {','.join(signals) or '-'} {gone_at:.6f}\n"


def _exit_line(status: int) -> tuple[str, int]:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        return f"signal {signal.Signals(sig).name}", 128 + sig
    code = os.waitstatus_to_exitcode(status)
    return str(code), code


def _status_code(status: int) -> int:
    """The exit code as ``subprocess`` reports it: negative for a signal."""
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.waitstatus_to_exitcode(status)


def _to_devnull(fds: tuple[int, ...]) -> None:
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in fds:
        os.dup2(devnull, fd)
    os.close(devnull)


def _wait_for(child: int | None, parent: int, watched: bool) -> int | None:
    """Reap children until ``child`` exits (its wait status) or, with None, until none is left.

    Raises :class:`_EndRequested` on a signal, or when the parent is gone (polled where the
    kernel cannot tell).
    """
    while True:
        try:
            if watched:
                pid, status = os.waitpid(-1, 0)
            else:
                pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return None
        if pid == 0:
            if os.getppid() != parent:
                raise _EndRequested
            time.sleep(_PARENT_POLL_S)
        elif pid == child:
            return status


def main(argv: list[str]) -> int:
    """Run the keeper: ``argv`` is ``[PARENT_PID, GRACE_S, [--status-fd FD], [--wrapped N], --,
    COMMAND...]``.

    Returns:
        the server's exit status (128 + N when signal N ended it; 0 with ``--status-fd``,
        which carries it instead); 143 when asked to end the tree; 2 for bad arguments; 127
        when the command cannot be run (the child says why on stderr).
    """
    stamp("keeper.main")
    status_fd: int | None = None
    spare_fd: int | None = None
    wrapped = 0
    if len(argv) > 4 and argv[2] == "--status-fd":
        status_fd = int(argv[3])
        argv = argv[:2] + argv[4:]
    if len(argv) > 4 and argv[2] == "--wrapped":
        wrapped = int(argv[3])
        argv = argv[:2] + argv[4:]
    if len(argv) > 4 and argv[2] == "--spare" and status_fd is not None:
        spare_fd = int(argv[3])
        argv = argv[:2] + argv[4:]
    if len(argv) < 3 + (spare_fd is None) or argv[2] != "--":
        print(
            "usage: guard.py PARENT_PID GRACE_S [--status-fd FD [--spare FD]] -- COMMAND...",
            file=sys.stderr,
        )
        return 2
    parent, grace_s, command = int(argv[0]), float(argv[1]), argv[3:]
    for sig in ENDING_SIGNALS:
        signal.signal(sig, _on_signal)
    if os.getpgrp() != os.getpid():
        os.setsid()
    keeper = os.getpid()
    guard = 0
    try:
        _prctl(_PR_SET_CHILD_SUBREAPER, 1)
        watched = _prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM))
        if os.getppid() != parent:  # the parent died before the kernel was asked to tell
            return 1
        guard = os.fork()
        if guard == 0:
            os._exit(_guard(keeper, command, status_fd, grace_s, spare_fd))
        _to_devnull((0, 1) if status_fd is None else (0, 1, 2))
        if spare_fd is not None:
            os.close(spare_fd)
        status = _wait_for(guard, parent, watched)
        assert status is not None
        if status_fd is not None:
            if os.WIFSIGNALED(status):  # the command killed its guard: end everything now
                _write(status_fd, f"killed {_status_code(status)}\n")
                _write(status_fd, _ending_line(end_tree(grace_s)))
                return 0
            _wait_for(None, parent, watched)  # leftovers: desk ends them when it has read
            return 0
        text, code = _exit_line(status)
        if os.WIFSIGNALED(status):
            _write(2, f"\n{EXIT_MARK}{text}\n")
        with contextlib.suppress(_EndRequested):
            end_tree(grace_s)  # what the server left behind
        return code
    except _EndRequested:
        stamp("keeper.asked")
        ending = end_tree(grace_s, uncounted=frozenset({guard, *only_children(guard, wrapped)}))
        if status_fd is not None:
            _write(status_fd, _ending_line(ending))
        return 143


def _guard(
    keeper: int, command: list[str], status_fd: int | None, grace_s: float, spare_fd: int | None
) -> int:
    """In the forked guard: run the command (read from ``spare_fd`` first, when given),
    report its end; end the tree if the keeper dies."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the keeper ends the guard with the tree
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, _on_signal)
    try:
        os.setpgid(0, 0)
        _prctl(_PR_SET_CHILD_SUBREAPER, 1)
        watched = _prctl(_PR_SET_PDEATHSIG, int(signal.SIGHUP))
        if os.getppid() != keeper:
            return 1
        if status_fd is None:
            _write(2, f"{GROUP_MARK}{os.getpgrp()}\n")
        stamp("guard.forking")
        child = os.fork()
        if child == 0:
            if status_fd is not None:
                os.close(status_fd)
            if spare_fd is None:
                _exec(command)
            _default_signals()
            _exec_spec(spare_fd)
        _to_devnull((0, 1) if status_fd is None else (0, 1, 2))
        if spare_fd is not None:
            os.close(spare_fd)
        if status_fd is not None:  # one write: the two lines arrive together, in this order
            _write(status_fd, f"guard {os.getpid()}\npid {child}\n")
        status = _wait_for(child, keeper, watched)
        assert status is not None
    except _EndRequested:
        end_tree(grace_s)
        return 143
    if status_fd is not None:
        _write(status_fd, f"exit {_status_code(status)}\n")
        return 0
    text, code = _exit_line(status)
    _write(2, f"\n{EXIT_MARK}{text}\n")
    return code


def _default_signals() -> None:
    for sig in (*ENDING_SIGNALS, signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(sig, signal.SIG_DFL)


def _exec(command: list[str], env: dict[str, str] | None = None) -> NoReturn:
    """In the forked child: become the command (never returns)."""
    _default_signals()
    try:
        if env is None:
            os.execvp(command[0], command)
        os.execvpe(command[0], command, env)
    except OSError as exc:
        os.write(2, f"cannot run {command[0]!r}: {exc.strerror or exc}\n".encode())
    os._exit(127)


def _exec_spec(spare_fd: int) -> NoReturn:
    """In a spare's forked child: wait for the command (:func:`spec_bytes`) until desk closes
    the pipe, then become it; exit 0 when desk closed the pipe without one (never returns)."""
    chunks: list[bytes] = []
    while chunk := os.read(spare_fd, 65_536):
        chunks.append(chunk)
    os.close(spare_fd)
    if not chunks:
        os._exit(0)
    stamp("guard.spec_read")
    try:
        spec = json.loads(b"".join(chunks))
        command, cwd, env = list(spec["argv"]), str(spec["cwd"]), dict(spec["env"])
    except (ValueError, KeyError, TypeError):
        os.write(2, b"cannot run the command: its description could not be read\n")
        os._exit(127)
    try:
        os.chdir(cwd)
    except OSError as exc:
        os.write(2, f"cannot run the command in {cwd!r}: {exc.strerror or exc}\n".encode())
        os._exit(127)
    _exec(command, env)


__all__ = [
    "EXIT_MARK",
    "GROUP_MARK",
    "KILL_WAIT_S",
    "command_line",
    "descendants",
    "end_tree",
    "main",
    "spec_bytes",
]


if __name__ == "__main__":
    os._exit(main(sys.argv[1:]))  # no interpreter teardown: desk waits for this exit
