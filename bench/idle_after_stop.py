"""After a stop: how soon "idle" and the idle keys are on screen, and how quiet desk falls.

The real ``desk`` runs in a pseudo-terminal (:mod:`pty_desk`) against llama.cpp's recorded
stream (``--replay``: ``../shared/streams/replay.py``, byte for byte and gap for gap), a real
server (``--base-url URL``, behind a relay that stamps the close) or the demo model. Each press:
a prompt and Enter, 0.15-1.2 s into the reply the ESC byte, then

- ``idle_on_screen_ms``: the server saw the connection close -> the status bar's "○ idle"
  came from the terminal; ``footer_on_screen_ms``: the same for the footer's idle Enter key
  ("Send"); ``esc_to_close_ms``: the key -> the server saw the close;
- ``idle_after_turn_end_ms``, ``footer_after_turn_end_ms``: the same from the turn's end
  (its thread out of the request, ``turn.returned`` below: the stop receipt's "worker exited"),
  the issue's "within 50 ms of the turn's end";
- ``cpu_after_stop_pct``: desk's CPU from 200 to 700 ms after the close (every thread; a
  busy-waiting thread shows here); ``wakeups_after_stop``: the times desk's threads were put
  on a CPU in that window (``/proc/PID/task/*/schedstat``: a timer or a worker that keeps
  ticking shows here even when each tick is cheap); ``busy_threads``: the threads that ran
  in that window, with their CPU (ms) and wakeups, summed over the presses;
  ``cpu_to_2s_ms``: desk's CPU from 200 ms to 2 s after the close (what was put off is here);
- ``stages_ms``: desk's own stamps (``DESK_STAMPS``, :mod:`agent.stamps`) along the way,
  each from the close: the socket shut down by the stop, the turn's thread out of its request
  (``turn.returned``), booked, the window published, saved, ``message.complete`` published,
  on the delivery thread, in the UI, "idle" set, and the first frame queued for the terminal
  after that; ``ui_cpu_to_idle_frame_ms``: the CPU the UI thread spent from taking the
  turn's end to queueing that frame (what the frame waited for besides the scheduler: on a
  loaded machine the wall-clock figures swing with the load, this one does not).

``--hog N`` runs N busy processes pinned to the cores meanwhile (:mod:`load`). Targets (issue
21): "idle" and the footer within 50 ms of the turn's end, CPU under 2 % from 200 ms after.

Run: ``python bench/idle_after_stop.py [--replay | --base-url URL] [--presses 30] [--hog 2]
[--seed 1] [--detail]``; prints JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from esc_latency import PROMPT, cpu_ns, desk_args, wait_until  # noqa: E402
from load import start_hogs, stop_hogs  # noqa: E402
from pty_desk import PtyDesk  # noqa: E402
from stamps_file import read_stamps  # noqa: E402
from stats import percentiles  # noqa: E402
from stream_servers import DemoServer, ReplayServer, StreamServer, WatchedServer  # noqa: E402

IDLE = "○ idle".encode()
"""The status bar's idle state as painted."""
FOOTER_IDLE = b"Send"
"""The footer's Enter key once no turn runs (Queue or Steer while one does)."""
CPU_FROM_S, CPU_TO_S = 0.2, 0.7
"""The window after the close in which desk's CPU and wakeups are counted (s)."""
LATER_TO_S = 2.0
"""The end of the longer window (from ``CPU_FROM_S``): work put off past the first is here."""
STAGES = (
    "agent.interrupt",
    "socket.shut",
    "agent.cancel_on_loop",
    "agent.stop_caught",
    "agent.done",
    "turn.returned",
    "turn.settled",
    "turn.window",
    "turn.saved",
    "turn.published",
    "bridge.complete",
    "ui.complete",
    "ui.idle_set",
    "frame.queued",
)
"""Stamps read after each press, in the order the stop path passes them."""


def thread_stats(pid: int) -> dict[str, tuple[int, int]]:
    """Each thread of ``pid``: name-tid -> (CPU ns, times put on a CPU), from schedstat."""
    out: dict[str, tuple[int, int]] = {}
    base = Path(f"/proc/{pid}/task")
    try:
        tids = [p.name for p in base.iterdir()]
    except OSError:
        return out
    for tid in tids:
        try:
            name = (base / tid / "comm").read_text().strip()
            run_ns, _wait, slices = (base / tid / "schedstat").read_text().split()[:3]
        except (OSError, ValueError):
            continue
        out[f"{name}-{tid}"] = (int(run_ns), int(slices))
    return out


def one_press(
    server: StreamServer, desk: PtyDesk, stamps: Path, delay_s: float
) -> dict[str, Any] | None:
    """Prompt, Enter, ``delay_s`` into the reply, Esc; the figures of that press (None: stuck)."""
    before = server.mark()
    entered = desk.write(PROMPT + b"\r")
    started = server.started(before, 10.0)
    wait_until((started or entered) + delay_s)
    _, offset = read_stamps(stamps, 0)
    stop_mark = desk.mark
    esc = desk.write(b"\x1b")
    outcome = server.outcome(before, esc, 20.0)
    if outcome is None or outcome.at is None:
        return None
    closed = outcome.at
    result: dict[str, Any] = {"kind": outcome.kind, "esc_to_close_ms": (closed - esc) * 1000}
    if outcome.kind == "closed":
        wait_until(closed + CPU_FROM_S)
        cpu_before, threads_before = cpu_ns(desk.proc.pid), thread_stats(desk.proc.pid)
        wait_until(closed + CPU_TO_S)
        cpu_after, threads_after = cpu_ns(desk.proc.pid), thread_stats(desk.proc.pid)
        result["cpu_after_stop_pct"] = (cpu_after - cpu_before) / (CPU_TO_S - CPU_FROM_S) / 1e7
        busy: dict[str, tuple[float, int]] = {}
        for name, (ns, slices) in threads_after.items():
            ns0, slices0 = threads_before.get(name, (0, 0))
            if slices > slices0:
                busy[name] = ((ns - ns0) / 1e6, slices - slices0)
        result["wakeups_after_stop"] = sum(s for _, s in busy.values())
        result["busy_threads"] = busy
        wait_until(closed + LATER_TO_S)
        result["cpu_to_2s_ms"] = (cpu_ns(desk.proc.pid) - cpu_before) / 1e6
    idle = desk.wait_for(IDLE, 30.0, start=stop_mark)
    if idle is None:
        return None
    footer = desk.wait_for(FOOTER_IDLE, 5.0, start=stop_mark)
    result["idle_on_screen_ms"] = (idle - closed) * 1000
    if footer is not None:
        result["footer_on_screen_ms"] = (footer - closed) * 1000
    found, _ = read_stamps(stamps, offset)
    stages: dict[str, float] = {}
    ui_cpu: dict[str, float] = {}
    for at, _thread, what, _key, cpu in found:
        if what in STAGES and what not in stages:
            if what == "frame.queued" and "ui.idle_set" not in stages:
                continue  # the first frame after "idle" was set
            stages[what] = (at - closed) * 1000
            ui_cpu[what] = cpu
    result["stages_ms"] = stages
    if "turn.returned" in stages:  # the turn's end, from the close
        ended = stages["turn.returned"]
        result["idle_after_turn_end_ms"] = result["idle_on_screen_ms"] - ended
        if "footer_on_screen_ms" in result:
            result["footer_after_turn_end_ms"] = result["footer_on_screen_ms"] - ended
    if "ui.complete" in ui_cpu and "frame.queued" in ui_cpu:  # the UI thread's work, not waits
        result["ui_cpu_to_idle_frame_ms"] = (ui_cpu["frame.queued"] - ui_cpu["ui.complete"]) * 1e3
    time.sleep(0.1)
    return result


def summarize(results: list[dict[str, Any]], stuck: int) -> dict[str, Any]:
    """The presses' figures as percentiles (ms, %, counts)."""

    def pick(key: str) -> dict[str, float]:
        return percentiles([r[key] for r in results if key in r])

    threads: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    for r in results:
        for name, (ms, slices) in r.get("busy_threads", {}).items():
            base = name.rsplit("-", 1)[0]
            threads[base][0] += ms
            threads[base][1] += slices
    return {
        "presses": len(results),
        "stuck": stuck,
        "closed": sum(r["kind"] == "closed" for r in results),
        "esc_to_close_ms": pick("esc_to_close_ms"),
        "idle_on_screen_ms": pick("idle_on_screen_ms"),
        "footer_on_screen_ms": pick("footer_on_screen_ms"),
        "idle_after_turn_end_ms": pick("idle_after_turn_end_ms"),
        "footer_after_turn_end_ms": pick("footer_after_turn_end_ms"),
        "ui_cpu_to_idle_frame_ms": pick("ui_cpu_to_idle_frame_ms"),
        "cpu_after_stop_pct": pick("cpu_after_stop_pct"),
        "wakeups_after_stop": pick("wakeups_after_stop"),
        "cpu_to_2s_ms": pick("cpu_to_2s_ms"),
        "busy_threads_total": {
            name: {"cpu_ms": round(v[0], 1), "wakeups": int(v[1])}
            for name, v in sorted(threads.items(), key=lambda kv: -kv[1][0])
        },
        "stages_ms_p50": {
            stage: percentiles(
                [r["stages_ms"][stage] for r in results if stage in r["stages_ms"]]
            ).get("p50", 0.0)
            for stage in STAGES
        },
        "stages_ms_p99": {
            stage: percentiles(
                [r["stages_ms"][stage] for r in results if stage in r["stages_ms"]]
            ).get("p99", 0.0)
            for stage in STAGES
        },
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--replay", action="store_true", help="llama-server's recorded stream")
    where.add_argument("--base-url", help="a real server, e.g. http://127.0.0.1:8080/v1")
    parser.add_argument("--presses", type=int, default=30)
    parser.add_argument("--per-desk", type=int, default=0, help="presses before a restart")
    parser.add_argument("--hog", type=int, default=0, help="busy processes, pinned to cores")
    parser.add_argument("--rate", type=float, default=2000.0, help="demo model tokens/s")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--detail", action="store_true", help="each press on stderr")
    args = parser.parse_args(argv)
    server: StreamServer
    model = ""
    if args.replay:
        server = ReplayServer()
    elif args.base_url:
        server = WatchedServer(args.base_url)
    else:
        server, model = DemoServer(), "demo"
    server.configure(args.rate, "document")
    per_desk = args.per_desk or (4 if isinstance(server, WatchedServer) else 10)
    rng = random.Random(args.seed)
    stamps = Path(tempfile.mkdtemp(prefix="desk-stamps-")) / "stamps.txt"
    results: list[dict[str, Any]] = []
    stuck = 0
    hogs = start_hogs(args.hog)
    load_before = os.getloadavg()[0]
    try:
        while len(results) + stuck < args.presses:
            desk = PtyDesk(desk_args(server, model, "embedded"), env={"DESK_STAMPS": str(stamps)})
            try:
                if desk.wait_for(IDLE, 30.0) is None or desk.wait_for(b"window", 30.0) is None:
                    raise RuntimeError(f"desk did not start: {desk.tail()!r}")
                time.sleep(0.3)
                for _ in range(min(per_desk, args.presses - len(results) - stuck)):
                    result = one_press(server, desk, stamps, rng.uniform(0.15, 1.2))
                    if result is None:
                        stuck += 1
                        break
                    results.append(result)
                    if args.detail:
                        print(json.dumps(result, default=round), file=sys.stderr, flush=True)
            finally:
                desk.quit()
    finally:
        stop_hogs(hogs)
        server.stop()
    out = {
        "cpus": os.cpu_count(),
        "server": type(server).__name__,
        "hog": args.hog,
        "load_before": load_before,
        "load_after": os.getloadavg()[0],
        **summarize(results, stuck),
    }
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
