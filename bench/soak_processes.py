"""The processes of a soak: the demo model in a process of its own, and what is left behind.

``DemoProcess`` runs the demo model outside the bench's process: inside, the demo server's
record book (the last 1,000 requests, each with its whole body: every message and the tool
schemas, ~20 KB a request) and uvicorn's buffers would count as the gateway's RSS.
``descendants(pid)`` lists a process's live descendants.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class DemoProcess:
    """``python -m demo_model --port 0 --tps TPS`` started and listening.

    Args:
        tokens_per_second: the demo model's pace.
        extra: more flags (``--slots 8``).

    Raises:
        RuntimeError: the server did not print its base URL (it could not start).
    """

    model = "demo"

    def __init__(self, tokens_per_second: float, *extra: str) -> None:
        self.proc = subprocess.Popen(
            [
                *(sys.executable, "-m", "demo_model", "--port", "0"),
                *("--tps", str(tokens_per_second), *extra),
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self.proc.stdout is not None
        self.base_url = self.proc.stdout.readline().strip()
        if not self.base_url.startswith("http"):
            self.stop()
            raise RuntimeError("the demo model did not start")

    def stop(self) -> None:
        """End the server (SIGTERM, then SIGKILL after 10 s) and reap it."""
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (``PR_SET_CHILD_SUBREAPER``):
    a process left behind by a killed host stays a descendant, so :func:`descendants` sees
    it. True when the kernel took it."""
    libc = ctypes.CDLL(None, use_errno=True)
    return bool(libc.prctl(36, 1, 0, 0, 0) == 0)


def reap_orphans(known: set[int]) -> int:
    """Reap this process's exited children that are not in ``known`` (orphans it adopted as
    subreaper); how many."""
    reaped = 0
    me = str(os.getpid())
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in known:
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] == "Z" and fields[1] == me:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(int(entry), os.WNOHANG)
                reaped += 1
    return reaped


def descendants(root: int) -> set[int]:
    """Every live (non-zombie) descendant of ``root`` found in ``/proc``."""
    parent: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] == "Z":
            continue
        parent[int(entry)] = int(fields[1])
    found: set[int] = set()
    frontier = {root}
    while frontier:
        frontier = {pid for pid, ppid in parent.items() if ppid in frontier} - found
        found |= frontier
    return found
