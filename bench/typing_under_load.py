"""Typing right after Enter under load: is every prompt sent whole, in order, once?

The real ``desk`` runs in a pseudo-terminal (:mod:`pty_desk`) against the demo model in a
process of its own (short replies, so the queue drains). Each pair types ``A<i>`` and Enter,
waits a gap (5-200 ms), then types ``B<i>`` and Enter, and reads desk's own store (``--db``)
until both turns have ended. A pair is ``whole`` when the store has exactly the two prompts
``A<i>``, ``B<i>`` in that order; ``merged`` when one prompt holds text of both; ``lost`` when a
prompt never arrived (the store is read once the desk's turns have settled). ``--hog N`` runs
N busy processes pinned to the cores (:mod:`load`) beside it. A desk that exited on its own
(``desk_exited``: its code and the end of its screen) is restarted. ``--replay EVENTS`` answers
instead with ``../shared/streams/replay.py`` replaying llama.cpp's own server, cut to its first
EVENTS writes and its end (short turns of the same bytes, about 1,000 SSE events a second).

Per gap and overall: counts, and p50/p99/max in ms from the second Enter to both turns saved.

Run: ``python bench/typing_under_load.py [--pairs 1000] [--gaps-ms 5 10 20 50 100 200]
[--hog 2] [--per-desk 100] [--seed 1] [--max-seconds 0] [--replay 40]``; prints JSON (``pairs``
says how many ran when ``--max-seconds`` cut it short).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from desk_store import ended_turns  # noqa: E402
from load import start_hogs, stop_hogs  # noqa: E402
from pty_desk import PtyDesk  # noqa: E402
from stats import percentiles  # noqa: E402
from stream_servers import ReplayServer  # noqa: E402

LOST_AFTER_S = 30.0
"""How long a pair waits for its two prompts to be saved before the next is typed (s)."""


def demo_server() -> tuple[subprocess.Popen[str], str]:
    """``python -m demo_model`` answering in a few tokens; its process and base URL."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "demo_model", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    base_url = proc.stdout.readline().strip()
    import httpx

    root = base_url.removesuffix("/v1")
    knobs = {"tokens_per_second": 2000.0, "max_tokens": 4, "n_ctx": 1_000_000_000}
    httpx.post(f"{root}/demo/config", json=knobs, trust_env=False).raise_for_status()
    return proc, base_url


def wait_until(moment: float) -> None:
    """Sleep until ``time.monotonic()`` reaches ``moment`` (spinning for the last 2 ms)."""
    while (left := moment - time.monotonic()) > 0:
        time.sleep(min(left, 0.01) if left > 0.002 else 0)


def one_pair(desk: PtyDesk, db: Path, index: int, gap_s: float) -> dict[str, Any]:
    """Type ``A<index>`` Enter, wait ``gap_s``, ``B<index>`` Enter; wait (bounded) until the
    store has both (how long after the second Enter is a figure; :func:`classify` decides)."""
    first, second = f"A{index}", f"B{index}"
    entered = desk.write(first.encode() + b"\r")
    wait_until(entered + gap_s)
    last = desk.write(second.encode() + b"\r")
    result: dict[str, Any] = {"index": index, "gap_ms": round(gap_s * 1000, 1)}
    deadline = last + LOST_AFTER_S
    while time.monotonic() < deadline:
        prompts = {t.prompt for t in ended_turns(db)}
        if first in prompts and second in prompts:
            result["saved_ms"] = round((time.monotonic() - last) * 1000, 2)
            break
        time.sleep(0.005)
    return result


def tail(desk: PtyDesk) -> str:
    """The last lines desk painted, as text (its traceback when it crashed)."""
    text = desk.tail(4000).decode(errors="replace")
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)[-1200:]


def classify(results: list[dict[str, Any]], prompts: list[str]) -> None:
    """Mark each pair ``whole`` (both prompts saved as typed, once, A before B), ``merged``
    (one prompt holds both) or ``lost`` (one never arrived); ``other`` otherwise."""
    for result in results:
        first, second = f"A{result['index']}", f"B{result['index']}"
        if any(first in p and second in p for p in prompts):
            result["outcome"] = "merged"
        elif first not in prompts or second not in prompts:
            result["outcome"] = "lost"
        elif prompts.count(first) == prompts.count(second) == 1 and prompts.index(
            first
        ) < prompts.index(second):
            result["outcome"] = "whole"
        else:
            result["outcome"] = "other"


def settled(db: Path, quiet_s: float = 3.0, limit_s: float = 60.0) -> list[str]:
    """The saved prompts once no new turn ended for ``quiet_s`` (at most ``limit_s``)."""
    deadline = time.monotonic() + limit_s
    count, since = -1, time.monotonic()
    while time.monotonic() < deadline:
        prompts = [t.prompt for t in ended_turns(db)]
        if len(prompts) != count:
            count, since = len(prompts), time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            break
        time.sleep(0.05)
    return [t.prompt for t in ended_turns(db)]


def summary(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts and the Enter -> saved figures of some pairs."""
    counts = {k: sum(r["outcome"] == k for r in results) for k in ("whole", "merged", "lost")}
    counts["other"] = len(results) - sum(counts.values())
    return {
        "pairs": len(results),
        **counts,
        "second_enter_to_both_saved_ms": percentiles(
            [r["saved_ms"] for r in results if "saved_ms" in r]
        ),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--pairs", type=int, default=1000)
    parser.add_argument("--gaps-ms", type=float, nargs="+", default=[5, 10, 20, 50, 100, 200])
    parser.add_argument("--hog", type=int, default=2, help="busy processes pinned to the cores")
    parser.add_argument("--per-desk", type=int, default=100, help="pairs before a restart")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-seconds", type=float, default=0.0, help="stop early (0: never)")
    parser.add_argument("--replay", type=int, default=0, help="replay.py, cut to EVENTS writes")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    replay: ReplayServer | None = None
    server: subprocess.Popen[str] | None = None
    if args.replay:
        replay = ReplayServer(events=args.replay)
        base_url, settings = replay.base_url, ["--context-window", "1000000"]
    else:
        server, base_url = demo_server()
        settings = ["--model", "demo"]
    hogs = start_hogs(args.hog)
    results: list[dict[str, Any]] = []
    exits: list[dict[str, Any]] = []
    stuck = 0
    started = time.monotonic()
    try:

        def more() -> bool:
            late = args.max_seconds and time.monotonic() - started > args.max_seconds
            return len(results) < args.pairs and stuck < 3 and not late

        while more():
            with tempfile.TemporaryDirectory(prefix="desk-typing-") as home:
                db = Path(home) / "desk.db"
                desk = PtyDesk(["--base-url", base_url, *settings, "--db", str(db)])
                try:
                    if desk.wait_for(b"idle", 60.0) is None:
                        stuck += 1
                        continue
                    time.sleep(0.3)
                    ran: list[dict[str, Any]] = []
                    for _ in range(min(args.per_desk, args.pairs - len(results))):
                        if not more():
                            break
                        gap = rng.choice(args.gaps_ms) / 1000.0
                        ran.append(one_pair(desk, db, len(results) + len(ran), gap))
                        if desk.proc.poll() is not None:  # its pairs are lost: say why
                            exits.append({"code": desk.proc.returncode, "tail": tail(desk)})
                            break
                    classify(ran, settled(db))
                    results.extend(ran)
                    for result in ran:
                        if result["outcome"] != "whole":
                            print(json.dumps(result), file=sys.stderr, flush=True)
                finally:
                    desk.quit()
    finally:
        stop_hogs(hogs)
        if server is not None:
            server.terminate()
            server.wait(10)
        if replay is not None:
            replay.stop()
    out: dict[str, Any] = {
        "cpus": os.cpu_count(),
        "hogs": args.hog,
        "server": f"replay cut to {args.replay} events" if args.replay else "demo, 4 tokens",
        "load_average": os.getloadavg(),
        "seconds": round(time.monotonic() - started, 1),
        "desk_stuck": stuck,
        "desk_exited": exits,
        **summary(results),
        "by_gap_ms": {
            str(gap): summary([r for r in results if r["gap_ms"] == round(gap, 1)])
            for gap in args.gaps_ms
        },
        "not_whole": [r for r in results if r["outcome"] != "whole"][:10],
    }
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
