"""The guard of one stdio MCP server: it dies with desk, and takes the server's process group along.

The stdio transport does not start the server itself but this file, run by path with the same
interpreter (``python -I -S guard.py PARENT_PID GRACE_S -- COMMAND ARGS...``). The transport starts
it in a new session, so the guard leads its own process group; it forks the server into that group
(the server inherits the transport's stdin, stdout and stderr, and the guard keeps none of the
first two, so the server alone holds the pipes) and waits for it.

Why: a server must not outlive desk, even when desk is killed with SIGKILL and runs no cleanup.
The guard asks the kernel for a signal when its parent dies (Linux ``prctl(PR_SET_PDEATHSIG)``;
elsewhere it polls ``getppid()``), and a server's own children are in the group too, which the
kernel's signal to one process would not reach. How the group is ended, whatever asked for it (the
parent's death, a SIGTERM or SIGHUP, or the server exiting and leaving children behind):

1. SIGTERM and SIGCONT to the whole group (the guard ignores SIGTERM from then on);
2. up to ``GRACE_S`` seconds for every member but the guard to be gone (read from ``/proc``);
3. SIGKILL to the whole group, the guard included, if any member is left.

The guard's first stderr line is ``desk-mcp-guard: group <pgid>``. When the server exits by
itself, the guard writes one more line on stderr,
``desk-mcp-guard: exit <code>`` or ``desk-mcp-guard: exit signal <NAME>``, so desk can say how it
ended, and exits with the server's status. The file imports the standard library only and runs
with ``-S``: it starts in about 20 ms.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time

EXIT_MARK = "desk-mcp-guard: exit "
"""The start of the guard's last stderr line when the server exited by itself."""

GROUP_MARK = "desk-mcp-guard: group "
"""The start of the guard's first stderr line, which names the server's process group."""

_PR_SET_PDEATHSIG = 1
_ENDING_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
_POLL_S = 0.01
_PARENT_POLL_S = 0.5


class _EndRequested(Exception):
    """Raised by the signal handler to leave the wait: the group must be ended."""


def _on_signal(_signum: int, _frame: object) -> None:
    raise _EndRequested


def _ask_for_parent_death_signal() -> bool:
    """``prctl(PR_SET_PDEATHSIG, SIGTERM)``; False where there is no such call."""
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    return int(libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)) == 0


def _others_alive(pgid: int, me: int) -> bool:
    """True while a member of ``pgid`` other than ``me`` runs (zombies do not count)."""
    try:
        names = os.listdir("/proc")
    except OSError:  # no /proc: probe the group; the guard itself keeps it non-empty
        return True
    for name in names:
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                raw = handle.read()
        except OSError:
            continue
        fields = raw[raw.rfind(b")") + 2 :].split()
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            return True
    return False


def _reap(server: int) -> int | None:
    """Reap the server if it exited; its wait status, else None."""
    with contextlib.suppress(ChildProcessError):
        pid, status = os.waitpid(server, os.WNOHANG)
        if pid == server:
            return status
    return None


def end_group(server: int, grace_s: float) -> None:
    """SIGTERM the guard's group, wait up to ``grace_s`` seconds, then SIGKILL what is left.

    Args:
        server: the server's pid (reaped here when it exits).
        grace_s: seconds the members get after SIGTERM.
    """
    for sig in _ENDING_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    pgid = os.getpgrp()
    me = os.getpid()
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGTERM)
        os.killpg(pgid, signal.SIGCONT)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        _reap(server)
        if not _others_alive(pgid, me):
            return
        time.sleep(_POLL_S)
    os.killpg(pgid, signal.SIGKILL)  # the guard too: nothing is left to do


def _exit_line(status: int) -> tuple[str, int]:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        return f"signal {signal.Signals(sig).name}", 128 + sig
    code = os.waitstatus_to_exitcode(status)
    return str(code), code


def main(argv: list[str]) -> int:
    """Run the guard; ``argv`` is ``[PARENT_PID, GRACE_S, "--", COMMAND, ARGS...]``.

    Returns:
        the server's exit status (128 + N when signal N ended it); 2 for bad arguments; 127
        when the command cannot be run (the child says why on stderr).
    """
    if len(argv) < 4 or argv[2] != "--":
        print("usage: guard.py PARENT_PID GRACE_S -- COMMAND [ARGS...]", file=sys.stderr)
        return 2
    parent, grace_s, command = int(argv[0]), float(argv[1]), argv[3:]
    for sig in _ENDING_SIGNALS:
        signal.signal(sig, _on_signal)
    if os.getpgrp() != os.getpid():  # never end a group the guard does not lead
        os.setsid()
    with contextlib.suppress(OSError):
        os.write(2, f"{GROUP_MARK}{os.getpgrp()}\n".encode())
    server = 0
    try:
        watched = _ask_for_parent_death_signal()
        if os.getppid() != parent:  # the parent died before the kernel was asked to tell
            return 1
        server = os.fork()
        if server == 0:
            _exec(command)
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(devnull, 1)
        os.close(devnull)
        status = _wait(server, parent, watched)
    except _EndRequested:
        if server:
            end_group(server, grace_s)
        return 143
    text, code = _exit_line(status)
    with contextlib.suppress(OSError):
        os.write(2, f"\n{EXIT_MARK}{text}\n".encode())
    with contextlib.suppress(_EndRequested):
        end_group(server, grace_s)  # children the server left behind
    return code


def _exec(command: list[str]) -> None:
    """In the forked child: become the server (never returns)."""
    for sig in _ENDING_SIGNALS:
        signal.signal(sig, signal.SIG_DFL)
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        os.write(2, f"cannot run {command[0]!r}: {exc.strerror or exc}\n".encode())
    os._exit(127)


def _wait(server: int, parent: int, watched: bool) -> int:
    """The server's wait status once it exits (raises :class:`_EndRequested` on a signal)."""
    if watched:
        return os.waitpid(server, 0)[1]
    while True:  # no parent-death signal here: look at the parent now and then
        status = _reap(server)
        if status is not None:
            return status
        if os.getppid() != parent:
            raise _EndRequested
        time.sleep(_PARENT_POLL_S)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
