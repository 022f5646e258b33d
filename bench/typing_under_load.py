"""Typing right after Enter under load: is every prompt sent whole, in order, once?

The real ``desk`` runs in a pseudo-terminal (:mod:`pty_desk`) against the demo model in a
process of its own (short replies, so the queue drains). Each pair types ``A<i>`` and Enter,
waits a gap (5-200 ms), then types ``B<i>`` and Enter, and reads desk's own store (``--db``)
until both turns have ended. A pair is ``whole`` when the store has exactly the two prompts
``A<i>``, ``B<i>`` in that order; ``merged`` when one prompt holds text of both; ``lost`` when a
prompt never arrived (within 10 s). ``--hog N`` runs N busy processes pinned to the cores
(:mod:`load`) beside it.

Per gap and overall: counts, and p50/p99/max in ms from the second Enter to both turns saved.

Run: ``python bench/typing_under_load.py [--pairs 1000] [--gaps-ms 5 10 20 50 100 200]
[--hog 2] [--per-desk 100] [--seed 1] [--max-seconds 0]``; prints JSON (``pairs`` says how
many ran when ``--max-seconds`` cut it short).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from desk_store import wait_turns  # noqa: E402
from load import start_hogs, stop_hogs  # noqa: E402
from pty_desk import PtyDesk  # noqa: E402
from stats import percentiles  # noqa: E402

LOST_AFTER_S = 10.0
"""A prompt not saved this long after its Enter is counted lost."""


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


def one_pair(desk: PtyDesk, db: Path, done: int, index: int, gap_s: float) -> dict[str, Any]:
    """Type ``A<index>`` Enter, wait ``gap_s``, ``B<index>`` Enter; classify what was saved."""
    first, second = f"A{index}", f"B{index}"
    entered = desk.write(first.encode() + b"\r")
    wait_until(entered + gap_s)
    last = desk.write(second.encode() + b"\r")
    turns = wait_turns(db, done + 2, LOST_AFTER_S)
    saved_at = time.monotonic()
    prompts = [t.prompt for t in turns[done:]]
    result: dict[str, Any] = {"gap_ms": round(gap_s * 1000, 1), "prompts": prompts}
    if prompts == [first, second]:
        result["outcome"] = "whole"
        result["saved_ms"] = round((saved_at - last) * 1000, 2)
    elif any(first in p and second in p for p in prompts):
        result["outcome"] = "merged"
    elif len(prompts) < 2:
        result["outcome"] = "lost"
    else:
        result["outcome"] = "other"  # both arrived, but changed or out of order
    return result


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
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    server, base_url = demo_server()
    hogs = start_hogs(args.hog)
    results: list[dict[str, Any]] = []
    stuck = 0
    started = time.monotonic()
    try:

        def more() -> bool:
            late = args.max_seconds and time.monotonic() - started > args.max_seconds
            return len(results) < args.pairs and stuck < 3 and not late

        while more():
            with tempfile.TemporaryDirectory(prefix="desk-typing-") as home:
                db = Path(home) / "desk.db"
                desk = PtyDesk(["--base-url", base_url, "--model", "demo", "--db", str(db)])
                try:
                    if desk.wait_for(b"idle", 60.0) is None:
                        stuck += 1
                        continue
                    time.sleep(0.3)
                    done = 0
                    for _ in range(min(args.per_desk, args.pairs - len(results))):
                        if not more():
                            break
                        gap = rng.choice(args.gaps_ms) / 1000.0
                        result = one_pair(desk, db, done, len(results), gap)
                        results.append(result)
                        done += len(result["prompts"])
                        if result["outcome"] != "whole":
                            print(json.dumps(result), file=sys.stderr, flush=True)
                            done = len(wait_turns(db, 10**9, 2.0))  # settle before going on
                finally:
                    desk.quit()
    finally:
        stop_hogs(hogs)
        server.terminate()
        server.wait(10)
    out: dict[str, Any] = {
        "cpus": os.cpu_count(),
        "hogs": args.hog,
        "load_average": os.getloadavg(),
        "seconds": round(time.monotonic() - started, 1),
        "desk_stuck": stuck,
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
