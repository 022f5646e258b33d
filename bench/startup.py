"""How soon ``desk`` shows its prompt box, whatever the model server does, and whether keys
typed meanwhile are kept.

Each launch runs the real ``desk`` in a pseudo-terminal (120x40, TERM=xterm-256color, a fresh
config folder and session database, see ``bench/pty_desk.py``) and measures from just before
the process started:

- ``first_paint_s``: the prompt box's placeholder is on screen (the first frame, drawn before
  the app is imported, see ``desk/early_frame.py``);
- ``app_paint_s``: the app's own first frame is on screen (its status bar's ``○ idle``);
- ``app_cpu_s``: the CPU time desk had used by then (user + system; on a busy machine the
  time to the frame is mostly waiting for a core, this is the work the frame cost);
- ``kept``: a word typed at a random moment in the first ``--type-within`` seconds (while the
  desk starts) shows up in the app's prompt box.

Cases (``--cases``): ``reachable`` (the demo model, in this process), ``unreachable`` (a closed
loopback port), ``refused`` (a demo model that wants another API key), and ``no-frame``
(reachable, with ``DESK_EARLY_FRAME=0``: the app paints first, as before the early frame).
For each: p50, p99 and max of the times, and how many launches kept the typed word. One warm-up
launch first (file cache, .pyc files), not counted.

``--hog N`` runs N busy processes pinned to the cores for the whole bench (``bench/load.py``):
the machine of a person whose local model server takes the cores.

Run: ``python bench/startup.py [--runs 50] [--hog 2] [--cases reachable unreachable refused
no-frame]``; prints JSON. Targets: p99 first paint <= 0.8 s; the app's own frame p50 <= 0.8 s
with ``--hog 2``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import statistics
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from load import start_hogs, stop_hogs  # noqa: E402
from pty_desk import PtyDesk  # noqa: E402

from demo_model.config import DemoConfig  # noqa: E402
from demo_model.server import DemoModelServer  # noqa: E402

PLACEHOLDER = b"sk anything"
APP_FRAME = "○ idle".encode()
TIMEOUT_S = 20.0


def closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cpu_seconds(pid: int) -> float | None:
    """The CPU time (user + system, all threads) process ``pid`` used so far, in seconds
    (None when it is gone). Unlike the time to the frame, it hardly depends on how busy the
    machine is: what the frame costs, not how long it waited for a core."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            fields = handle.read().rpartition(")")[2].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def launch(
    args: list[str], env: dict[str, str], type_within_s: float, rng: random.Random
) -> dict[str, Any]:
    """One launch: the times and whether the typed word was kept."""
    word = f"kept{rng.randrange(10_000, 99_999)}"
    desk = PtyDesk(args, env)
    seen: dict[bytes, float | None] = {}

    def watch(needle: bytes) -> None:  # the moment it is painted, not when someone looks
        seen[needle] = desk.wait_for(needle, TIMEOUT_S)
        if needle == APP_FRAME:
            cpu["app"] = cpu_seconds(desk.proc.pid)

    cpu: dict[str, float | None] = {}

    watchers = [threading.Thread(target=watch, args=(n,)) for n in (PLACEHOLDER, APP_FRAME)]
    try:
        for watcher in watchers:
            watcher.start()
        typed_at = desk.started_at + rng.uniform(0.0, type_within_s)
        time.sleep(max(0.0, typed_at - time.monotonic()))
        desk.write(word.encode())
        for watcher in watchers:
            watcher.join(TIMEOUT_S + 1.0)
        kept = desk.wait_for(word.encode(), 3.0, start=0) is not None
    finally:
        desk.quit()
    painted, app = seen.get(PLACEHOLDER), seen.get(APP_FRAME)
    return {
        "first_paint_s": None if painted is None else painted - desk.started_at,
        "app_paint_s": None if app is None else app - desk.started_at,
        "app_cpu_s": cpu.get("app"),
        "typed_s": typed_at - desk.started_at,
        "kept": kept,
    }


def summary(values: Sequence[float]) -> dict[str, float]:
    """p50, p99 and max, in seconds (p99 of fewer than 100 runs: the nearest rank)."""
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(0.99 * len(ordered) + 0.5) - 1))
    return {
        "p50_s": round(statistics.median(ordered), 3),
        "p99_s": round(ordered[rank], 3),
        "max_s": round(ordered[-1], 3),
    }


def run_case(name: str, runs: int, type_within_s: float, seed: int) -> dict[str, Any]:
    """``runs`` launches of one case (and a warm-up one)."""
    rng = random.Random(seed)
    server: DemoModelServer | None = None
    env: dict[str, str] = {}
    if name in ("reachable", "no-frame"):
        server = DemoModelServer(DemoConfig(tokens_per_second=30.0))
        server.start()
        args = ["--base-url", server.base_url, "--model", "demo"]
        if name == "no-frame":
            env["DESK_EARLY_FRAME"] = "0"
    elif name == "refused":
        server = DemoModelServer(DemoConfig(api_key="the-right-key"))
        server.start()
        args = ["--base-url", server.base_url, "--model", "demo", "--api-key", "wrong"]
    elif name == "unreachable":
        args = ["--base-url", f"http://127.0.0.1:{closed_port()}/v1", "--model", "demo"]
    else:
        raise SystemExit(f"unknown case {name!r}")
    try:
        launch(args, env, type_within_s, rng)  # warm-up
        results = [launch(args, env, type_within_s, rng) for _ in range(runs)]
    finally:
        if server is not None:
            server.stop()
    firsts = [r["first_paint_s"] for r in results if r["first_paint_s"] is not None]
    apps = [r["app_paint_s"] for r in results if r["app_paint_s"] is not None]
    cpus = [r["app_cpu_s"] for r in results if r["app_cpu_s"] is not None]
    out: dict[str, Any] = {"case": name, "runs": runs}
    out["first_paint"] = summary(firsts) if firsts else None
    out["app_paint"] = summary(apps) if apps else None
    out["app_cpu"] = summary(cpus) if cpus else None
    out["load_average"] = round(os.getloadavg()[0], 1)
    out["no_paint"] = runs - len(firsts)
    out["kept"] = sum(r["kept"] for r in results)
    out["lost"] = [round(r["typed_s"], 3) for r in results if not r["kept"]]
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument(
        "--cases", nargs="+", default=["reachable", "unreachable", "refused", "no-frame"]
    )
    parser.add_argument("--type-within", type=float, default=1.5, help="seconds after start")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--hog", type=int, default=0, help="busy processes, pinned to cores")
    args = parser.parse_args(argv)
    # An installed desk has its .pyc files: a launch that compiles every module measures the
    # compiler (the warm-up launch writes them).
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    report: dict[str, Any] = {"cpus": os.cpu_count(), "python": sys.version.split()[0]}
    report["hog"] = args.hog
    report["cases"] = []
    hogs = start_hogs(args.hog)
    try:
        for case in args.cases:
            result = run_case(case, args.runs, args.type_within, args.seed)
            print(json.dumps(result), file=sys.stderr, flush=True)
            report["cases"].append(result)
    finally:
        stop_hogs(hogs)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
