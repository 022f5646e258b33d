"""The guard of a process desk starts: it dies with desk, and takes the process's whole tree along.

A stdio MCP server and a ``shell`` tool's command are not started by desk itself but by this
file, run by path with the same interpreter
(``python -I -S guard.py PARENT_PID GRACE_S [--status-fd FD] -- COMMAND ARGS...``). desk starts
it in a new session, so the guard leads its own process group; it makes itself a "child
subreaper" (Linux ``prctl(PR_SET_CHILD_SUBREAPER)``), so every descendant orphaned on the way,
even one that left the group with ``setsid``, is re-parented to the guard rather than to PID 1;
it forks the command into that group (the command inherits desk's stdin, stdout and stderr, and
the guard keeps none of the first two, so the command alone holds the pipes) and waits for it.

Why: a server must not outlive desk, even when desk is killed with SIGKILL and runs no cleanup.
The guard asks the kernel for a signal when its parent dies (Linux ``prctl(PR_SET_PDEATHSIG)``;
elsewhere it polls ``getppid()``), and a server's own children are in the group too, which the
kernel's signal to one process would not reach. The signal is tied to the *thread* that forked
the guard: desk forks it from a thread that outlives what it guards (the MCP loop thread, the
turn's worker thread), and that thread's end ends the guard too. How the tree is ended, whatever
asked for it (the parent's death, a SIGTERM or SIGHUP, or the server exiting and leaving children
behind):

1. SIGTERM and SIGCONT to the whole group and to every other descendant of the guard, found by
   walking ``/proc`` by parent pid (the guard ignores SIGTERM from then on);
2. up to ``GRACE_S`` seconds for all of them but the guard to be gone;
3. SIGKILL to what is left (the group, the guard included, and each descendant).

With ``--status-fd FD`` (the ``shell`` tool) the guard writes nothing on stderr (it is the
command's output there), asks for SIGHUP rather than SIGTERM at the parent's death and ignores
SIGTERM (desk, alive, ends the tree itself and signals the group to do it), and does not end
what the command leaves behind: it writes ``pid <n>`` (the command's pid) on FD, then the
command's exit status (``exit <code>``, negative for a signal, as ``subprocess`` reports it),
closes FD and lingers, reaping, until its last descendant is gone, so desk can drain the
output and end the leftovers itself, and a SIGKILL of desk meanwhile still ends them.

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
_PR_SET_CHILD_SUBREAPER = 36
_ENDING_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
_POLL_S = 0.01
_PARENT_POLL_S = 0.5


class _EndRequested(Exception):
    """Raised by the signal handler to leave the wait: the group must be ended."""


def _on_signal(_signum: int, _frame: object) -> None:
    raise _EndRequested


def _prctl(option: int, value: int) -> bool:
    """``prctl(option, value)``; False where there is no such call or it failed."""
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    return int(libc.prctl(option, value, 0, 0, 0)) == 0


def _ask_for_parent_death_signal(sig: signal.Signals) -> bool:
    """``prctl(PR_SET_PDEATHSIG, sig)``; False where there is no such call."""
    return _prctl(_PR_SET_PDEATHSIG, int(sig))


def tree(root: int, pgid: int | None = None) -> set[int]:
    """Live processes of ``pgid`` and live descendants of ``root`` (``root`` excluded), from /proc.

    The descendants are found by walking parent pids down from ``root``, so a member that left
    the group (``setsid``) is found as long as an ancestor of it is still ``root``'s descendant
    or, ``root`` being a child subreaper, ``root`` adopted it. Zombies do not count.

    Args:
        root: the pid whose descendants are wanted.
        pgid: a process group whose live members are wanted too; None for none.

    Returns:
        the pids; an empty set without ``/proc``.
    """
    return set(tree_groups(root, pgid))


def tree_groups(root: int, pgid: int | None = None) -> dict[int, int]:
    """:func:`tree` with each pid's process group id: ``{pid: pgid}``."""
    children: dict[int, list[int]] = {}
    groups: dict[int, int] = {}
    found: set[int] = set()
    try:
        names = os.listdir("/proc")
    except OSError:
        return {}
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                raw = handle.read()
        except OSError:
            continue
        # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
        fields = raw[raw.rfind(b")") + 2 :].split()
        if len(fields) < 3 or fields[0] in (b"Z", b"X"):
            continue
        pid = int(name)
        groups[pid] = int(fields[2])
        children.setdefault(int(fields[1]), []).append(pid)
        if pgid is not None and groups[pid] == pgid:
            found.add(pid)
    seen = {root}
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in seen:
                seen.add(child)
                todo.append(child)
    found |= seen
    found.discard(root)
    return {pid: groups[pid] for pid in found if pid in groups}


def signal_tree(pgid: int, sig: signal.Signals, members: dict[int, int]) -> None:
    """Send ``sig`` to the group ``pgid`` and to each of ``members`` outside it (``{pid: pgid}``;
    a member of the group gets it once, through the group)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
    for pid, group in members.items():
        if group != pgid:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)


def _reap_all() -> int | None:
    """Reap every exited child; the wait status of the last one, None when none exited."""
    status = None
    while True:
        try:
            pid, found = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return status
        if pid == 0:
            return status
        status = found


def end_group(server: int, grace_s: float) -> None:
    """SIGTERM the guard's group and descendants, wait up to ``grace_s`` s, then SIGKILL the rest.

    Args:
        server: the server's pid (reaped here when it exits, with every other child).
        grace_s: seconds the members get after SIGTERM.
    """
    for sig in _ENDING_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    pgid = os.getpgrp()
    me = os.getpid()
    signal_tree(pgid, signal.SIGTERM, tree_groups(me, pgid))
    signal_tree(pgid, signal.SIGCONT, tree_groups(me, pgid))
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        _reap_all()
        if not tree(me, pgid):
            return
        time.sleep(_POLL_S)
    signal_tree(pgid, signal.SIGKILL, tree_groups(me, pgid))  # the guard too: nothing is left


def _exit_line(status: int) -> tuple[str, int]:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        return f"signal {signal.Signals(sig).name}", 128 + sig
    code = os.waitstatus_to_exitcode(status)
    return str(code), code


def main(argv: list[str]) -> int:
    """Run the guard; ``argv`` is ``[PARENT_PID, GRACE_S, ["--status-fd", FD,] "--", COMMAND...]``.

    Returns:
        the server's exit status (128 + N when signal N ended it; 0 with ``--status-fd``,
        which carries it instead); 2 for bad arguments; 127 when the command cannot be run
        (the child says why on stderr).
    """
    status_fd: int | None = None
    if len(argv) > 4 and argv[2] == "--status-fd":
        status_fd = int(argv[3])
        argv = argv[:2] + argv[4:]
    if len(argv) < 4 or argv[2] != "--":
        print(
            "usage: guard.py PARENT_PID GRACE_S [--status-fd FD] -- COMMAND [ARGS...]",
            file=sys.stderr,
        )
        return 2
    parent, grace_s, command = int(argv[0]), float(argv[1]), argv[3:]
    for sig in _ENDING_SIGNALS:
        signal.signal(sig, _on_signal)
    death_signal = signal.SIGTERM
    if status_fd is not None:  # desk ends the tree itself, SIGTERM to the group included
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        death_signal = signal.SIGHUP
    if os.getpgrp() != os.getpid():  # never end a group the guard does not lead
        os.setsid()
    if status_fd is None:
        with contextlib.suppress(OSError):
            os.write(2, f"{GROUP_MARK}{os.getpgrp()}\n".encode())
    server = 0
    try:
        _prctl(_PR_SET_CHILD_SUBREAPER, 1)
        watched = _ask_for_parent_death_signal(death_signal)
        if os.getppid() != parent:  # the parent died before the kernel was asked to tell
            return 1
        server = os.fork()
        if server == 0:
            if status_fd is not None:
                os.close(status_fd)
            _exec(command)
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(devnull, 1)
        if status_fd is not None:
            os.dup2(devnull, 2)  # the command's output pipe: the command alone holds it
        os.close(devnull)
        if status_fd is not None:
            with contextlib.suppress(OSError):
                os.write(status_fd, f"pid {server}\n".encode())
        status = _wait(server, parent, watched)
        if status_fd is not None:
            _report(status_fd, status)
            _linger(parent, watched)
            return 0
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


def _report(status_fd: int, status: int) -> None:
    """Write ``exit <code>`` (negative: the signal) on ``status_fd`` and close it."""
    code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.waitstatus_to_exitcode(status)
    with contextlib.suppress(OSError):
        os.write(status_fd, f"exit {code}\n".encode())
    with contextlib.suppress(OSError):
        os.close(status_fd)


def _linger(parent: int, watched: bool) -> None:
    """Reap children until none is left (raises :class:`_EndRequested` on a signal)."""
    while True:
        try:
            if watched:
                os.waitpid(-1, 0)
                continue
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            if os.getppid() != parent:
                raise _EndRequested
            time.sleep(_PARENT_POLL_S)


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
        with contextlib.suppress(ChildProcessError):
            pid, status = os.waitpid(server, os.WNOHANG)
            if pid == server:
                return status
        if os.getppid() != parent:
            raise _EndRequested
        time.sleep(_PARENT_POLL_S)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
