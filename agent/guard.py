"""The guard of a process desk starts: nothing the process starts outlives desk, or the guard.

A stdio MCP server and a ``shell`` tool's command are not started by desk itself but by this
file, run by path with the same interpreter
(``python -I -S guard.py PARENT_PID GRACE_S [--status-fd FD] -- COMMAND ARGS...``), which
becomes two processes that watch each other::

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

* desk asks (a stop, a timeout, leftovers after the command exited), by SIGTERM to the keeper
  (the MCP SDK sends it to the keeper's group); desk dies, even by SIGKILL: the keeper gets its
  parent-death SIGTERM; SIGHUP and SIGINT too: the **keeper** ends the tree;
* the command kills its guard (``kill -9 $PPID``) or its own group (``kill -9 0``, the keeper
  is not in it): the guard's orphans go to the keeper, which sees its child gone and ends the
  tree at once;
* someone kills the keeper: the **guard** gets its parent-death SIGHUP and ends its own tree
  (every orphan below the command is its own, it being a subreaper).

Only killing both at once (or ``kill -9 -1``) lets a process escape; a process can no more
leave its subreapers' tree than its ancestry.

How a tree is ended (:func:`end_tree`), by whichever of the two ends it: every live descendant
is found by walking ``/proc`` (a zombie is walked through, not counted) and held by a pidfd
(``os.pidfd_open``, its start time checked, so a recycled pid is never signalled); each gets
SIGTERM and SIGCONT once, the walk is repeated (a process forked meanwhile gets its SIGTERM
too) until the ender has no child left (a subreaper with no child has no descendant) or
``GRACE_S`` seconds passed; then SIGKILL, repeated over fresh walks, until no child is left
(at most 5 s). The ender never signals itself or its group, so it outlives what it ends.
"Ended" counts the processes seen alive whose pidfd then said they exited (the guard not
counted); "survivors" the others.

With ``--status-fd FD`` (the ``shell`` tool) nothing is written on stderr (it is the command's
output there). The guard writes ``pid <n>`` (the command's pid) on FD, then the command's exit
status (``exit <code>``, negative for a signal, as ``subprocess`` reports it), and exits; the
keeper lingers, reaping, until its last descendant is gone (then exits 0 without a word) or it
is asked to end them, so desk can drain the output first. Each ending the keeper makes is
written on FD as ``ended <N> <SURVIVORS> <SIGNALS|-> <GONE_AT>`` (signals comma-separated,
``GONE_AT`` on ``time.monotonic()``'s clock, which is system-wide on Linux); when the guard was
killed the keeper writes ``killed <-signal>`` (in place of ``exit``) first.

Without ``--status-fd`` (an MCP server) the guard's first stderr line is
``desk-mcp-guard: group <pgid>``; when the server exits by itself, the guard writes
``desk-mcp-guard: exit <code>`` or ``desk-mcp-guard: exit signal <NAME>`` and exits with the
server's status, and the keeper ends what the server left behind and exits with that status.

The file imports the standard library only and runs with ``-I -S`` (:func:`command_line`
imports it as a module, so its bytecode is cached and only the interpreter's start is paid).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import time

EXIT_MARK = "desk-mcp-guard: exit "
"""The start of the guard's last stderr line when the server exited by itself."""

GROUP_MARK = "desk-mcp-guard: group "
"""The start of the guard's first stderr line, which names the server's process group."""

KILL_WAIT_S = 5.0
"""Seconds an ender keeps sending SIGKILL before it reports what is left as survivors."""

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_ENDING_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
_FIRST_SWEEP_S = 0.002
_LAST_SWEEP_S = 0.05
_PARENT_POLL_S = 0.5


_BOOT = (
    "import os, sys; sys.path.insert(0, {dir!r}); from guard import main; "
    "os._exit(main(sys.argv[1:]))"
)


def command_line(
    parent: int, grace_s: float, status_fd: int | None = None, wrapped: int = 0
) -> list[str]:
    """The keeper's command line up to ``--`` (the command follows it).

    Args:
        parent: desk's pid (the keeper gives up at once if its parent is another).
        grace_s: seconds between SIGTERM and SIGKILL when the tree is ended.
        status_fd: the ``shell`` tool's status pipe (passed to the keeper), or None.
        wrapped: how many processes, each the only child of the one above, stand between the
            guard and the command (a sandbox's: :data:`agent.sandbox_init.WRAPPERS`); the
            keeper ends them last and does not count them.
    """
    boot = _BOOT.format(dir=os.path.dirname(os.path.abspath(__file__)))
    line = [sys.executable, "-I", "-S", "-c", boot, str(parent), f"{grace_s:g}"]
    if status_fd is not None:
        line += ["--status-fd", str(status_fd)]
    if wrapped:
        line += ["--wrapped", str(wrapped)]
    return [*line, "--"]


class _EndRequested(Exception):
    """Raised by the signal handler to leave a wait: the tree must be ended."""


def _on_signal(_signum: int, _frame: object) -> None:
    raise _EndRequested


def _prctl(option: int, value: int) -> bool:
    """``prctl(option, value)``; False where there is no such call or it failed."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes  # here: it costs start-up time and only Linux needs it

    libc = ctypes.CDLL(None, use_errno=True)
    return int(libc.prctl(option, value, 0, 0, 0)) == 0


def _scan() -> dict[int, tuple[int, bool, bytes]] | None:
    """Every process in ``/proc``: ``{pid: (ppid, alive, start time)}``; None without /proc."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return None
    found: dict[int, tuple[int, bool, bytes]] = {}
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                raw = handle.read()
        except OSError:
            continue
        # "pid (comm) state ppid pgrp ... starttime(22nd)": comm may hold spaces and ")".
        fields = raw[raw.rfind(b")") + 2 :].split()
        if len(fields) > 19:
            found[int(name)] = (int(fields[1]), fields[0] not in (b"Z", b"X"), fields[19])
    return found


def descendants(root: int) -> dict[int, bytes]:
    """Live descendants of ``root`` from ``/proc``: ``{pid: start time}`` (``root`` excluded).

    Walks each process's ``/proc/PID/task/TID/children`` down from ``root`` (a few reads per
    process of the tree), else every ``/proc/PID/stat``. Zombies are walked through (an exiting
    parent's children may still name it) but not returned. Empty without ``/proc``.
    """
    if not os.path.exists(f"/proc/self/task/{os.getpid()}/children"):
        return _descendants_by_scan(root)
    found: dict[int, bytes] = {}
    todo = [root]
    seen = {root}
    while todo:
        for child in _children(todo.pop()):
            if child in seen:
                continue
            seen.add(child)
            todo.append(child)
            stat = _stat(child)
            if stat is not None and stat[0]:
                found[child] = stat[1]
    return found


def _children(pid: int) -> list[int]:
    """``pid``'s children, from each of its threads' ``children`` file."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    out: list[int] = []
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children", "rb") as handle:
                out.extend(int(word) for word in handle.read().split())
        except OSError:
            continue
    return out


def _stat(pid: int) -> tuple[bool, bytes] | None:
    """``(alive, start time)`` of ``pid`` (alive: not a zombie); None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            raw = handle.read()
    except OSError:
        return None
    fields = raw[raw.rfind(b")") + 2 :].split()
    return (fields[0] not in (b"Z", b"X"), fields[19]) if len(fields) > 19 else None


def _descendants_by_scan(root: int) -> dict[int, bytes]:
    """:func:`descendants` from every process's ``/proc/PID/stat``."""
    table = _scan() or {}
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found: dict[int, bytes] = {}
    todo = [root]
    seen = {root}
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in seen:
                seen.add(child)
                todo.append(child)
                if table[child][1]:
                    found[child] = table[child][2]
    return found


def _start_time(pid: int) -> bytes | None:
    stat = _stat(pid)
    return stat[1] if stat is not None else None


class _Held:
    """The processes an ender saw, each held by a pidfd (-1 where there are no pidfds)."""

    def __init__(self) -> None:
        self.fds: dict[int, int] = {}
        self.gone: set[int] = set()

    def sweep(self, root: int) -> list[int]:
        """Walk ``root``'s descendants; hold and return the ones not seen before."""
        new: list[int] = []
        for pid, started in descendants(root).items():
            if pid in self.fds:
                continue
            try:
                fd = os.pidfd_open(pid) if hasattr(os, "pidfd_open") else -1
            except OSError:
                continue  # gone already
            if _start_time(pid) != started:  # the pid was recycled in between
                if fd >= 0:
                    os.close(fd)
                continue
            self.fds[pid] = fd
            new.append(pid)
        return new

    def alive(self) -> list[int]:
        """The held processes that have not exited (a zombie has exited)."""
        poller = select.poll()
        for pid, fd in self.fds.items():
            if pid not in self.gone and fd >= 0:
                poller.register(fd, select.POLLIN)
        by_fd = {fd: pid for pid, fd in self.fds.items()}
        self.gone.update(by_fd[fd] for fd, _ in poller.poll(0))
        for pid, fd in self.fds.items():  # without pidfds: /proc says
            if fd < 0 and pid not in self.gone and not _running(pid):
                self.gone.add(pid)
        return [pid for pid in self.fds if pid not in self.gone]

    def send(self, pids: list[int], sig: signal.Signals) -> None:
        for pid in pids:
            fd = self.fds[pid]
            with contextlib.suppress(OSError):
                if fd >= 0:
                    signal.pidfd_send_signal(fd, sig)
                else:
                    os.kill(pid, sig)

    def wait(self, timeout_s: float) -> None:
        """Until a held live process exits, or ``timeout_s``."""
        poller = select.poll()
        for pid in self.alive():
            if self.fds[pid] >= 0:
                poller.register(self.fds[pid], select.POLLIN)
        poller.poll(max(0, int(timeout_s * 1000)) or 1)

    def close(self) -> None:
        for fd in self.fds.values():
            if fd >= 0:
                os.close(fd)
        self.fds.clear()


def _running(pid: int) -> bool:
    """True while ``pid`` runs (not a zombie), from ``/proc``."""
    stat = _stat(pid)
    return stat is not None and stat[0]


def _reap() -> bool:
    """Reap every exited child; True while this process still has a child."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False
        if pid == 0:
            return True


def end_tree(
    grace_s: float, *, uncounted: frozenset[int] = frozenset(), kill_wait_s: float = KILL_WAIT_S
) -> tuple[int, int, tuple[str, ...], float]:
    """End every descendant of this process (a child subreaper): SIGTERM, grace, SIGKILL.

    The process ignores SIGTERM, SIGHUP and SIGINT from then on, and never signals itself.

    Args:
        grace_s: seconds the processes get after SIGTERM before SIGKILL.
        uncounted: pids ended last and not counted (the guard, when the keeper ends the tree):
            they get no SIGTERM (the guard exits when its command does) and SIGKILL only once
            nothing else is left, so that if the keeper is killed meanwhile the guard is still
            there to end its own tree.
        kill_wait_s: seconds of SIGKILL before giving up on what is left.

    Returns:
        ``(ended, survivors, signals, gone_at)``: processes seen alive then gone, and still
        alive; the signals sent (``("SIGTERM",)``, ``("SIGTERM", "SIGKILL")`` or none); the
        ``time.monotonic()`` when the tree was gone or the ender gave up.
    """
    for sig in _ENDING_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    me = os.getpid()
    held = _Held()
    signals: list[str] = []
    try:
        deadline = time.monotonic() + grace_s
        pause = _FIRST_SWEEP_S
        while True:
            new = held.sweep(me)
            if new and not signals:
                signals.append("SIGTERM")
            new = [pid for pid in new if pid not in uncounted]
            held.send(new, signal.SIGTERM)
            held.send(new, signal.SIGCONT)
            if not _reap() or time.monotonic() >= deadline:
                break
            held.wait(min(pause, deadline - time.monotonic()))
            pause = min(pause * 2, _LAST_SWEEP_S)
        if _reap():
            signals.append("SIGKILL")
            deadline = time.monotonic() + kill_wait_s
            while True:
                held.sweep(me)
                alive = held.alive()
                held.send([p for p in alive if p not in uncounted] or alive, signal.SIGKILL)
                if not _reap() or time.monotonic() >= deadline:
                    break
                held.wait(_FIRST_SWEEP_S)
        gone_at = time.monotonic()
        left = set(held.alive())
        counted = [pid for pid in held.fds if pid not in uncounted]
        survivors = sum(1 for pid in counted if pid in left)
        return len(counted) - survivors, survivors, tuple(signals), gone_at
    finally:
        held.close()


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
    status_fd: int | None = None
    wrapped = 0
    if len(argv) > 4 and argv[2] == "--status-fd":
        status_fd = int(argv[3])
        argv = argv[:2] + argv[4:]
    if len(argv) > 4 and argv[2] == "--wrapped":
        wrapped = int(argv[3])
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
            os._exit(_guard(keeper, command, status_fd, grace_s))
        _to_devnull((0, 1) if status_fd is None else (0, 1, 2))
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
        ending = end_tree(grace_s, uncounted=frozenset({guard, *_only_children(guard, wrapped)}))
        if status_fd is not None:
            _write(status_fd, _ending_line(ending))
        return 143


def _only_children(pid: int, depth: int) -> list[int]:
    """Up to ``depth`` processes below ``pid``, each the only child of the one above."""
    chain: list[int] = []
    while len(chain) < depth:
        kids = _children(pid)
        if len(kids) != 1:
            break
        pid = kids[0]
        chain.append(pid)
    return chain


def _guard(keeper: int, command: list[str], status_fd: int | None, grace_s: float) -> int:
    """In the forked guard: run the command, report its end; end the tree if the keeper dies."""
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
        child = os.fork()
        if child == 0:
            if status_fd is not None:
                os.close(status_fd)
            _exec(command)
        _to_devnull((0, 1) if status_fd is None else (0, 1, 2))
        if status_fd is not None:
            _write(status_fd, f"pid {child}\n")
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


def _exec(command: list[str]) -> None:
    """In the forked child: become the command (never returns)."""
    for sig in (*_ENDING_SIGNALS, signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(sig, signal.SIG_DFL)
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        os.write(2, f"cannot run {command[0]!r}: {exc.strerror or exc}\n".encode())
    os._exit(127)


if __name__ == "__main__":
    os._exit(main(sys.argv[1:]))  # no interpreter teardown: desk waits for this exit
