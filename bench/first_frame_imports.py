"""What ``desk`` imports before the app's own first frame, and what it costs.

Runs the real ``desk`` in a pseudo-terminal (see ``bench/pty_desk.py``) against the demo model
with ``PYTHONPROFILEIMPORTTIME=1``: Python writes one ``import time:`` line per module to stderr
(the pty) as it is imported, so the lines read before the status bar's ``○ idle`` is painted are
the modules the first frame waited for. Reports, for the median launch: the number of modules,
the summed self time (µs) by top-level package, and the slowest modules by self time.

Also reports p50 and p99 of the module count over the launches, and which of the gateway, the
agent's runtime, Markdown and syntax highlighting were loaded before the frame (``heavy``: it
should stay empty). ``--hog N`` runs N busy processes pinned to the cores meanwhile.

Run: ``python bench/first_frame_imports.py [--runs 5] [--top 25] [--hog 2]``; prints JSON. The
times are Python's own (``-X importtime``), on a machine that may be busy: compare counts and
shares.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from load import start_hogs, stop_hogs  # noqa: E402
from pty_desk import PtyDesk  # noqa: E402

from demo_model.config import DemoConfig  # noqa: E402
from demo_model.server import DemoModelServer  # noqa: E402

APP_FRAME = "○ idle".encode()
TIMEOUT_S = 30.0
HEAVY = ("tui_gateway.gateway", "agent.agent", "markdown_it", "pygments", "httpx")
"""Modules the app's first frame does not need."""
LINE = re.compile(rb"import time:\s+(\d+) \|\s+(\d+) \|( *)([\w.]+)")


def imports_before_frame(base_url: str) -> dict[str, int] | None:
    """One launch: module -> self time in µs, for the modules imported before the frame."""
    desk = PtyDesk(["--base-url", base_url, "--model", "demo"], {"PYTHONPROFILEIMPORTTIME": "1"})
    try:
        if desk.wait_for(APP_FRAME, TIMEOUT_S) is None:
            return None
        shown = desk.since(0)
    finally:
        desk.quit()
    end = shown.find(APP_FRAME)
    found: dict[str, int] = {}
    for match in LINE.finditer(shown[:end]):
        found[match.group(4).decode()] = int(match.group(1))
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--hog", type=int, default=0, help="busy processes, pinned to cores")
    args = parser.parse_args(argv)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed desk has its .pyc files
    server = DemoModelServer(DemoConfig())
    server.start()
    hogs = start_hogs(args.hog)
    try:
        imports_before_frame(server.base_url)  # warm-up: file cache, .pyc files
        launches = [imports_before_frame(server.base_url) for _ in range(args.runs)]
    finally:
        stop_hogs(hogs)
        server.stop()
    seen = [launch for launch in launches if launch is not None]
    if not seen:
        print(json.dumps({"error": "no frame"}))
        return 1
    seen.sort(key=lambda launch: sum(launch.values()))
    median = seen[len(seen) // 2]
    by_package: Counter[str] = Counter()
    for name, micros in median.items():
        by_package[name.split(".")[0]] += micros
    counts = sorted(len(launch) for launch in seen)
    report: dict[str, Any] = {
        "cpus": os.cpu_count(),
        "hog": args.hog,
        "load_average": round(os.getloadavg()[0], 1),
        "runs": len(seen),
        "modules": statistics.median(counts),
        "modules_p99": counts[max(0, min(len(counts) - 1, round(0.99 * len(counts) + 0.5) - 1))],
        "heavy": [
            heavy
            for heavy in HEAVY
            if any(n == heavy or n.startswith(heavy + ".") for launch in seen for n in launch)
        ],
        "self_ms_total": round(sum(median.values()) / 1000, 1),
        "ours": sorted(
            name
            for name in median
            if name.split(".")[0] in ("agent", "tui_gateway", "desk", "demo_model")
        ),
        "self_ms_by_package": {
            name: round(micros / 1000, 1) for name, micros in by_package.most_common(args.top)
        },
        "slowest_ms": {
            name: round(micros / 1000, 1) for name, micros in Counter(median).most_common(args.top)
        },
    }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
