"""The first process of a sandboxed shell command, inside bubblewrap: it tells the command's exit
while what the command left behind still runs, so desk ends and counts those as it does outside.

bwrap's own init (PID 1 of the sandbox's PID namespace) exits as soon as its first child does,
and the kernel then kills every process left in the namespace, counted by no one. So bwrap runs
this file as PID 1 in its place (``--as-pid-1``; ``python -I -S sandbox_init.py STATUS_FD --
COMMAND ARGS...``, standard library only): every orphan of the command comes to it; it runs the
command, writes ``exit <code>`` on ``STATUS_FD`` (the shell tool's status pipe; desk takes the
first ``exit`` line it reads, so the guard's later one for bwrap changes nothing) and then reaps
until no process of the command is left, and exits with the command's status. Leftovers, a stop
or a timeout are ended from outside by the keeper (:mod:`agent.guard`), which counts each
process of the command it ended and not the sandbox's own two (bwrap and this one); bwrap's
``--die-with-parent`` still takes the namespace down with it.
"""

from __future__ import annotations

# Not ``signal``: its enum costs start-up time, paid by every sandboxed command (no stubs).
import _signal  # type: ignore[import-not-found]
import os
import sys

WRAPPERS = 2
"""The sandbox's own processes between the guard and the command: bwrap and this one."""


def command_line(status_fd: int) -> list[str]:
    """This file's command line inside the sandbox up to ``--`` (the command follows it)."""
    return [sys.executable, "-I", "-S", os.path.abspath(__file__), str(status_fd), "--"]


def needed_paths() -> list[str]:
    """What :func:`command_line` needs to see inside the sandbox, to be bound there read-only
    at the same paths: this file, the interpreter's installation and its virtual environment.
    The sandbox gives the command a fresh ``/tmp`` and hides the deny list: a checkout or a
    virtual environment kept under ``/tmp`` would otherwise be gone ("bwrap: execvp ...")."""
    found = {os.path.abspath(__file__)}
    for prefix in (sys.prefix, sys.base_prefix, os.path.dirname(os.path.dirname(sys.executable))):
        found.add(os.path.realpath(prefix))
    found.add(os.path.dirname(os.path.realpath(sys.executable)))
    return sorted(found)


def main(argv: list[str]) -> int:
    """Run the command; ``argv`` is ``[STATUS_FD, "--", COMMAND...]``.

    Returns:
        the command's exit status (128 + N for signal N); 2 for bad arguments.
    """
    if len(argv) < 3 or argv[1] != "--":
        os.write(2, b"usage: sandbox_init.py STATUS_FD -- COMMAND [ARGS...]\n")
        return 2
    status_fd, command = int(argv[0]), argv[2:]
    child = os.fork()
    if child == 0:
        os.close(status_fd)
        for sig in (_signal.SIGPIPE, _signal.SIGXFSZ):  # Python ignores them; a shell must not
            _signal.signal(sig, _signal.SIG_DFL)
        try:
            os.execvp(command[0], command)
        except OSError as exc:
            os.write(2, f"cannot run {command[0]!r}: {exc.strerror or exc}\n".encode())
        os._exit(127)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # the output pipe ends with the command's last process, not with this
        os.dup2(devnull, fd)
    os.close(devnull)
    code = 0
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            return code
        if pid == child:
            signalled = os.WIFSIGNALED(status)
            said = -os.WTERMSIG(status) if signalled else os.waitstatus_to_exitcode(status)
            code = 128 + os.WTERMSIG(status) if signalled else said
            try:
                os.write(status_fd, f"exit {said}\n".encode())
                os.close(status_fd)
            except OSError:
                pass


if __name__ == "__main__":
    os._exit(main(sys.argv[1:]))
