"""Ctrl+Q with a reply streaming while another program holds the database's write lock.

The real ``desk`` runs in a pseudo-terminal (:mod:`pty_desk`) against the demo model in a process
of its own (``--rate`` tokens/s, endless paragraphs), with a session database of its own
(``--db``). A prompt streams for half a second; then another process takes the write lock
(``BEGIN IMMEDIATE``) and keeps it ``--hold-s`` (6 s); ``--into-s`` (0.5 s) later comes Ctrl+Q.

Per quit: when the model server saw the connection close, in ms after the key (a quit is a stop
first: it must not wait for the lock), when desk's process was gone (the quit waits for the
database once everything is stopped; the lock is let go about ``--hold-s`` minus ``--into-s``
after the key, by the locker's own clock), and the
outcome booked for the turn (``interrupted_by_system(gateway.shutdown)`` expected, none left
running).

Run: ``python bench/quit_under_lock.py [--quits 5] [--hog 2]``; prints JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from load import start_hogs, stop_hogs  # noqa: E402
from pty_desk import PtyDesk  # noqa: E402
from stats import percentiles  # noqa: E402
from stream_servers import DemoServer  # noqa: E402

LOCKER = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
conn.execute("COMMIT")
"""


def one_quit(server: DemoServer, hold_s: float, into_s: float) -> dict[str, Any]:
    """A desk, a streaming prompt, the lock taken, Ctrl+Q: the figures and the booked outcome."""
    with tempfile.TemporaryDirectory(prefix="desk-quit-lock-") as tmp:
        db = Path(tmp) / "desk.db"
        desk = PtyDesk(["--base-url", server.base_url, "--model", "demo", "--db", str(db)])
        locker: subprocess.Popen[str] | None = None
        try:
            if desk.wait_for(b"idle", 60.0) is None:
                return {"stuck": "start"}
            time.sleep(0.3)
            mark = server.mark()
            desk.write(b"Tell me everything about streams\r")
            deadline = time.monotonic() + 30.0
            while not server._records(mark):  # the request reached the model
                if time.monotonic() > deadline:
                    return {"stuck": "request"}
                time.sleep(0.01)
            time.sleep(0.5)  # streaming
            locker = subprocess.Popen(
                [sys.executable, "-c", LOCKER, str(db), str(hold_s)],
                stdout=subprocess.PIPE,
                text=True,
            )
            assert locker.stdout is not None
            if locker.stdout.readline() != "locked\n":
                return {"stuck": "lock"}
            time.sleep(into_s)
            key_at = time.monotonic()
            desk.write(b"\x11")
            seen = server.outcome(mark, key_at, 30.0)
            fd = os.pidfd_open(desk.proc.pid)
            try:
                ready, _, _ = select.select([fd], [], [], 30.0)
            finally:
                os.close(fd)
            if not ready:
                return {"stuck": "quit"}
            gone_at = time.monotonic()
            locker.wait(30.0)
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
                row = conn.execute(
                    "SELECT exit_reason FROM turns ORDER BY started_at DESC LIMIT 1"
                ).fetchone()
                running = conn.execute("SELECT count(*) FROM turns WHERE ended_at IS NULL")
                left = int(running.fetchone()[0])
            return {
                "server_saw": seen.kind if seen else None,
                "closed_ms": round((seen.at - key_at) * 1000, 1) if seen and seen.at else None,
                "exit_ms": round((gone_at - key_at) * 1000, 1),
                "booked": row[0] if row else None,
                "running_left": left,
            }
        finally:
            if locker is not None and locker.poll() is None:
                locker.kill()
                locker.wait(10.0)
            desk.quit()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quits", type=int, default=5)
    parser.add_argument("--hog", type=int, default=2, help="busy processes pinned to cores")
    parser.add_argument("--rate", type=float, default=40.0, help="tokens/s")
    parser.add_argument("--hold-s", type=float, default=6.0, help="the lock is held this long")
    parser.add_argument("--into-s", type=float, default=0.5, help="Ctrl+Q this far into it")
    args = parser.parse_args(argv)
    out: dict[str, Any] = {"cpus": os.cpu_count(), "hog": args.hog}
    out["load_before"] = os.getloadavg()[0]
    hogs = start_hogs(args.hog)
    server = DemoServer()
    results: list[dict[str, Any]] = []
    try:
        server.configure(args.rate, "paragraph")
        for _ in range(args.quits):
            result = one_quit(server, args.hold_s, args.into_s)
            print(json.dumps(result), file=sys.stderr)
            results.append(result)
    finally:
        server.stop()
        stop_hogs(hogs)
    done = [r for r in results if "stuck" not in r]
    out.update(
        {
            "quits": len(done),
            "stuck": [r["stuck"] for r in results if "stuck" in r],
            "key_to_server_close_ms": percentiles(
                [r["closed_ms"] for r in done if r["closed_ms"] is not None]
            ),
            "key_to_exit_ms": percentiles([r["exit_ms"] for r in done]),
            "lock_let_go_ms_after_key": round((args.hold_s - args.into_s) * 1000),
            "not_closed_by_the_client": sum(r["server_saw"] != "closed" for r in done),
            "booked": sorted({str(r["booked"]) for r in done}),
            "turns_left_running": sum(r["running_left"] for r in done),
            "load_after": os.getloadavg()[0],
        }
    )
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
