"""What ``desk`` imports before the app's own first frame, and what it costs.

Runs the real ``desk`` in a pseudo-terminal (see ``bench/pty_desk.py``) against the demo model
with ``PYTHONPROFILEIMPORTTIME=1``: Python writes one ``import time:`` line per module to stderr
(the pty) as it is imported, so the lines read before the status bar's ``○ idle`` is painted are
the modules the first frame waited for. Reports, for the median launch: the number of modules,
the summed self time (µs) by top-level package, and the slowest modules by self time.

Run: ``python bench/first_frame_imports.py [--runs 5] [--top 25]``; prints JSON. The times are
Python's own (``-X importtime``), on a machine that may be busy: compare counts and shares.
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

from pty_desk import PtyDesk  # noqa: E402

from demo_model.config import DemoConfig  # noqa: E402
from demo_model.server import DemoModelServer  # noqa: E402

APP_FRAME = "○ idle".encode()
TIMEOUT_S = 30.0
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
    args = parser.parse_args(argv)
    server = DemoModelServer(DemoConfig())
    server.start()
    try:
        imports_before_frame(server.base_url)  # warm-up: file cache, .pyc files
        launches = [imports_before_frame(server.base_url) for _ in range(args.runs)]
    finally:
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
    report: dict[str, Any] = {
        "cpus": os.cpu_count(),
        "runs": len(seen),
        "modules": statistics.median(len(launch) for launch in seen),
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
