"""Ctrl+Q -> desk's process gone, with a turn streaming, and with MCP servers and a child agent.

The real ``desk`` runs in a pseudo-terminal (:mod:`pty_desk`) with a session database of its own
(``--db``), ``DESK_STAMPS`` set (:mod:`agent.stamps`), and ``--hog N`` busy
processes pinned to the cores (:mod:`load`). Two conditions (``--only``):

- ``streaming``: against ``../shared/streams/replay.py`` (llama.cpp's own server replayed byte
  for byte, about 1,000 SSE events a second): a prompt, Enter, and Ctrl+Q ``--into-s`` (0.5 s)
  after desk shows the reply streaming;
- ``mcp_child``: against the demo model in a process of its own (``--child-rate`` tokens/s, one
  SSE event per token), with two MCP servers (``tests/mcp``'s test server, over stdio): the
  prompt ``delegate: ...`` makes the turn start a child agent, and Ctrl+Q comes ``--into-s``
  after the child's own request reached the model.

Ctrl+Q -> exit is from the write of the key byte to the moment the process was gone (a pidfd,
not ``Popen.wait``'s 50 ms polling). Each quit is then checked against the invariant: every turn
in the store ended (none left ``running``), the prompt's turn booked as a system stop
(``gateway.shutdown``), the partial reply saved (``streaming``: an assistant message of that
turn with text), and no process desk had started (MCP servers, their guards, tools) still alive;
``status_said`` counts the quits whose status bar said what it waited for (``stopping`` or
``quitting``) before the process was gone. ``stamps_ms``: per step of the quit, ms after the key
(p50/max over the quits).

Run: ``python bench/quit_latency.py [--quits 10] [--hog 2] [--only streaming,mcp_child]``;
prints JSON.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import select
import sqlite3
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from load import start_hogs, stop_hogs  # noqa: E402
from pty_desk import PtyDesk  # noqa: E402
from stats import percentiles  # noqa: E402
from stream_servers import DemoServer, ReplayServer  # noqa: E402

MCP_SERVER = ROOT / "tests" / "mcp" / "servers" / "desk_test_server.py"
STREAM_PROMPT = b"Tell me everything about streams"
CHILD_PROMPT = b"delegate: tell me everything about streams"


def descendants(pid: int) -> dict[int, str]:
    """Every process under ``pid`` now (pid -> command line), from ``/proc``."""
    parents: dict[int, int] = {}
    lines: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError):
            stat = Path(f"/proc/{entry}/stat").read_text()
            parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
            raw = Path(f"/proc/{entry}/cmdline").read_bytes()
            lines[int(entry)] = raw.replace(b"\0", b" ").decode(errors="replace").strip()
    found: dict[int, str] = {}
    frontier = [pid]
    while frontier:
        parent = frontier.pop()
        for child, its_parent in parents.items():
            if its_parent == parent and child not in found:
                found[child] = lines.get(child, "")
                frontier.append(child)
    return found


def alive(pids: Sequence[int]) -> list[int]:
    """Those of ``pids`` still running (not zombies)."""
    left = []
    for pid in pids:
        with contextlib.suppress(OSError):
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            if state != "Z":
                left.append(pid)
    return left


def wait_gone(pid: int, timeout_s: float) -> float | None:
    """``time.monotonic()`` when process ``pid`` ended (None: still running after
    ``timeout_s``)."""
    fd = os.pidfd_open(pid)
    try:
        ready, _, _ = select.select([fd], [], [], timeout_s)
        return time.monotonic() if ready else None
    finally:
        os.close(fd)


def stored(db: Path) -> dict[str, Any]:
    """What the store says once desk is gone: turns still running, the root turn's outcome,
    and whether its partial reply was saved."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        running = conn.execute("SELECT count(*) FROM turns WHERE ended_at IS NULL").fetchone()[0]
        root = conn.execute(
            "SELECT id, exit_reason, stop_issuer, stop_surface FROM turns"
            " WHERE parent_turn_id IS NULL ORDER BY started_at DESC LIMIT 1"
        ).fetchone()
        children = conn.execute(
            "SELECT count(*), sum(stop_issuer = 'system') FROM turns"
            " WHERE parent_turn_id IS NOT NULL"
        ).fetchone()
        reply = 0
        if root is not None:
            reply = conn.execute(
                "SELECT count(*) FROM messages WHERE turn_id = ? AND role = 'assistant'"
                " AND (length(content) > 0 OR tool_calls IS NOT NULL)",
                (root[0],),
            ).fetchone()[0]
    return {
        "running_left": int(running),
        "root": None if root is None else {"exit": root[1], "issuer": root[2], "surface": root[3]},
        "children": int(children[0] or 0),
        "children_by_system": int(children[1] or 0),
        "reply_saved": bool(reply),
    }


def read_stamps(path: Path, key_at: float) -> dict[str, float]:
    """The first stamp of each step, in ms after the key."""
    steps: dict[str, float] = {}
    with contextlib.suppress(OSError):
        for line in path.read_text().splitlines():
            at, _thread, step, *_key_and_cpu = line.split(" ")
            steps.setdefault(step, round((float(at) - key_at) * 1000, 2))
    return steps


def wait_for(check: Any, timeout_s: float) -> bool:
    """Poll ``check()`` every 10 ms until it is true or ``timeout_s`` passed."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.01)
    return False


def one_quit(kind: str, server: Any, into_s: float) -> dict[str, Any]:
    """Start a desk, start a turn (and a child, MCP servers), Ctrl+Q; the figures and checks."""
    with tempfile.TemporaryDirectory(prefix="desk-quit-") as tmp:
        db, stamps = Path(tmp) / "desk.db", Path(tmp) / "stamps"
        args = ["--base-url", server.base_url, "--db", str(db)]
        if kind == "streaming":
            args += ["--context-window", "1000000"]
        else:
            command = f"{sys.executable} {MCP_SERVER}"
            args += ["--model", "demo", "--mcp", f"one={command}", "--mcp", f"two={command}"]
        desk = PtyDesk(args, env={"DESK_STAMPS": str(stamps)})
        try:
            if desk.wait_for(b"idle", 60.0) is None:
                return {"stuck": "start"}
            if kind == "mcp_child":
                servers = lambda: sum(  # noqa: E731
                    "desk_test_server" in c for c in descendants(desk.proc.pid).values()
                )
                if not wait_for(lambda: servers() >= 2, 30.0):
                    return {"stuck": "mcp servers"}
            time.sleep(0.3)
            mark, painted_before = server.mark(), desk.mark
            desk.write((STREAM_PROMPT if kind == "streaming" else CHILD_PROMPT) + b"\r")
            if kind == "streaming":
                # The first POST the replay sees after the prompt may be the server's count of
                # the first request (it answers every POST with the stream), not the prompt's:
                # timed from it, the quit came before the reply's first words
                began = server.started(mark, 20.0)
                if desk.wait_for(b"streaming", 20.0, start=painted_before) is None:
                    return {"stuck": "stream"}
                began = time.monotonic() if began is not None else None
            else:
                began = child_request(server, mark, 30.0)
            if began is None:
                return {"stuck": "request"}
            while time.monotonic() < began + into_s:
                time.sleep(0.005)
            under = descendants(desk.proc.pid)
            wal = Path(f"{db}-wal")
            wal_kb = wal.stat().st_size // 1024 if wal.exists() else 0
            screen = desk.mark
            key_at = time.monotonic()  # before the write: desk may read it before it returns
            desk.write(b"\x11")
            gone_at = wait_gone(desk.proc.pid, 30.0)
            if gone_at is None:
                return {"stuck": "quit"}
            desk.proc.wait(5.0)
            painted = desk.since(screen)
            left = alive(list(under))
            result = {
                "ctrl_q_to_exit_ms": round((gone_at - key_at) * 1000, 2),
                "exit_code": desk.proc.returncode,
                "status_said": b"stopping" in painted or b"quitting" in painted,
                "processes_started": len(under),
                "wal_kb_at_key": wal_kb,
                "processes_left": [under[p] for p in left],
                "stamps": read_stamps(stamps, key_at),
                **stored(db),
            }
            for pid in left:  # the bench leaves nothing behind either
                with contextlib.suppress(OSError):
                    os.kill(pid, 9)
            return result
        finally:
            desk.quit()


def child_request(server: DemoServer, mark: int, timeout_s: float) -> float | None:
    """``time.monotonic()`` once the demo model has a second chat request after ``mark`` (the
    child's; the parent's first asked for the delegate call), or None."""
    if wait_for(lambda: len(server._records(mark)) >= 2, timeout_s):
        return time.monotonic()
    return None


def judged(kind: str, r: dict[str, Any]) -> list[str]:
    """What broke the invariant in one quit's result (empty: nothing)."""
    wrong = []
    if r["running_left"]:
        wrong.append("turns left running")
    root = r["root"] or {}
    if root.get("issuer") != "system" or root.get("surface") != "gateway.shutdown":
        wrong.append(f"root booked {root}")
    if kind == "streaming" and not r["reply_saved"]:
        wrong.append("partial reply not saved")
    if kind == "mcp_child" and (not r["children"] or r["children_by_system"] != r["children"]):
        wrong.append("child not booked as a system stop")
    if r["processes_left"]:
        wrong.append(f"processes left: {r['processes_left']}")
    if r["exit_code"] != 0:
        wrong.append(f"exit code {r['exit_code']}")
    return wrong


def run_condition(kind: str, quits: int, into_s: float, child_rate: float) -> dict[str, Any]:
    """``quits`` quits of ``kind``; p50/p99/max, broken invariants and stamps."""
    server: Any
    if kind == "streaming":
        server = ReplayServer()
    else:
        server = DemoServer()
        server.configure(child_rate, "document")
    times: list[float] = []
    steps: dict[str, list[float]] = defaultdict(list)
    broken: list[dict[str, Any]] = []
    stuck: list[str] = []
    said = 0
    try:
        for _ in range(quits):
            result = one_quit(kind, server, into_s)
            if "stuck" in result:
                stuck.append(result["stuck"])
                continue
            times.append(result["ctrl_q_to_exit_ms"])
            said += result["status_said"]
            for step, ms in result["stamps"].items():
                steps[step].append(ms)
            wrong = judged(kind, result)
            if wrong:
                broken.append({"wrong": wrong, "ms": result["ctrl_q_to_exit_ms"]})
            print(json.dumps({kind: result["ctrl_q_to_exit_ms"], "wrong": wrong}), file=sys.stderr)
    finally:
        server.stop()
    return {
        "quits": len(times),
        "ctrl_q_to_exit_ms": percentiles(times),
        "status_said_what_it_waits_for": said,
        "invariant_broken": broken,
        "stuck": stuck,
        "stamps_ms": {
            step: {"p50": percentiles(v)["p50"], "max": percentiles(v)["max"]}
            for step, v in sorted(steps.items(), key=lambda kv: sorted(kv[1])[len(kv[1]) // 2])
        },
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quits", type=int, default=10)
    parser.add_argument("--hog", type=int, default=2, help="busy processes pinned to cores")
    parser.add_argument("--only", default="streaming,mcp_child")
    parser.add_argument("--into-s", type=float, default=0.5, help="Ctrl+Q this far in (s)")
    parser.add_argument("--child-rate", type=float, default=200.0, help="tokens/s")
    args = parser.parse_args(argv)
    out: dict[str, Any] = {
        "cpus": os.cpu_count(),
        "hog": args.hog,
        "load_before": os.getloadavg()[0],
    }
    hogs = start_hogs(args.hog)
    try:
        for kind in args.only.split(","):
            out[kind] = run_condition(kind, args.quits, args.into_s, args.child_rate)
    finally:
        stop_hogs(hogs)
    out["load_after"] = os.getloadavg()[0]
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
