"""``sync_after``: the commits a thread makes inside the block are not fsynced one by one (the
waiter of a write goes on at once, a turn's end is shown without waiting for the disk); the
block's end syncs the log once; another thread's commits meanwhile keep their own fsync; what
is committed inside the block is read by other connections at once, and kept by a killed
process.

The fsyncs are counted by running the writes in a child process under ``strace``: what the
disk is asked to do is the behaviour, not which function asks."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

from agent.store import SqliteStore

ROOT = Path(__file__).resolve().parents[3]

WRITES = """
import os, sys, threading
from agent.store import SqliteStore
store = SqliteStore(sys.argv[1])
store.sessions.create_session("s0")
mark = lambda what: os.write(1, what.encode())
def other_thread():
    store.sessions.create_session("other")
mark("<plain>")
for i in range(3):
    store.sessions.create_session(f"p{i}")
mark("</plain><block>")
with store.sync_after():
    for i in range(3):
        store.sessions.create_session(f"b{i}")
        if i == 1:
            t = threading.Thread(target=other_thread)
            t.start()
            t.join()
    mark("<end>")
mark("</block>")
store.close()
"""


def syncs_between(trace: str, start: str, end: str) -> int:
    """fsync/fdatasync calls in ``trace`` between the writes of markers ``start`` and ``end``."""
    lines = trace.splitlines()
    first = next(i for i, line in enumerate(lines) if start in line and "write(1" in line)
    last = next(i for i, line in enumerate(lines) if end in line and "write(1" in line)
    return sum(1 for line in lines[first:last] if "fsync(" in line or "fdatasync(" in line)


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace counts the fsyncs")
def test_commits_inside_the_block_are_synced_once_at_its_end(tmp_path: Path) -> None:
    trace = tmp_path / "trace.txt"
    subprocess.run(
        ["strace", "-f", "-e", "trace=fsync,fdatasync,write", "-o", str(trace)]
        + [sys.executable, "-c", WRITES, str(tmp_path / "desk.db")],
        check=True,
        cwd=ROOT,
        timeout=120,
        capture_output=True,
    )
    text = trace.read_text()
    assert syncs_between(text, "<plain>", "</plain>") == 3  # one per commit, as ever
    # three commits of this thread: none of their own; the other thread's commit: its own
    assert syncs_between(text, "<block>", "<end>") == 1
    assert syncs_between(text, "<end>", "</block>") == 1  # the block's end: the log, once


def test_a_commit_inside_the_block_is_read_at_once_and_kept_by_a_killed_process(
    tmp_path: Path,
) -> None:
    path = tmp_path / "desk.db"
    script = (
        "import os, signal, sys\n"
        "from agent.store import SqliteStore\n"
        "store = SqliteStore(sys.argv[1])\n"
        "with store.sync_after():\n"
        "    store.sessions.create_session('s1', title='kept')\n"
        "    os.write(1, b'committed\\n')\n"
        "    sys.stdin.readline()\n"  # the test reads the row meanwhile, then kills it here
    )
    child = subprocess.Popen(
        [sys.executable, "-c", script, str(path)],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == b"committed\n"
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as other:
            row = other.execute("SELECT title FROM sessions WHERE id = 's1'").fetchone()
        assert row == ("kept",)  # another connection reads it before the block ends
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(30)
    reopened = SqliteStore(path)
    try:
        saved = reopened.sessions.get_session("s1")
        assert saved is not None and saved.title == "kept"
    finally:
        reopened.close()


def test_a_block_on_a_memory_or_closed_store_does_nothing(tmp_path: Path) -> None:
    memory = SqliteStore(":memory:")
    with memory.sync_after():
        memory.sessions.create_session("s1")
    assert memory.sessions.get_session("s1") is not None
    memory.close()
    store = SqliteStore(tmp_path / "desk.db")
    with store.sync_after():
        store.sessions.create_session("s1")
        store.close()  # a quit inside the block: its end has nothing to sync, and says nothing
    with pytest.raises(Exception, match="closed"):
        store.sessions.list_sessions()
