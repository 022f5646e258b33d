"""What grew inside a soak host: its live objects by type and its allocations by place.

The soak measures each host's RSS from outside; to say *what* grew, a host started with
``DESK_SOAK_MEMORY=PATH`` in its environment (``bench/soak.py --census`` or ``--tracemalloc``)
installs two signal handlers here: ``SIGUSR1`` (sent at the end of the warm-up) takes a census
of the live objects (``gc.get_objects`` by type) and, with ``DESK_SOAK_TRACEMALLOC=1``, a
tracemalloc snapshot; ``SIGUSR2`` (sent before the host is shut down) compares the host now to
that mark and writes the 15 types whose count grew most and the 10 places whose memory grew
most, with malloc's and Python's totals, as one JSON object to ``PATH``.
"""

from __future__ import annotations

import gc
import json
import os
import signal
import sys
import tracemalloc
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

from memory import MemorySample, census

ENV_PATH = "DESK_SOAK_MEMORY"
ENV_TRACE = "DESK_SOAK_TRACEMALLOC"


class Marks:
    """The host's mark (set by ``SIGUSR1``) and where the report goes."""

    def __init__(self, path: Path, trace: bool) -> None:
        self.path = path
        self.trace = trace
        self.census: Counter[str] | None = None
        self.snapshot: tracemalloc.Snapshot | None = None
        self.sample: MemorySample | None = None

    def mark(self, _sig: int, _frame: FrameType | None) -> None:
        self.census = census()
        self.sample = MemorySample.now(0.0)
        if self.trace:
            self.snapshot = tracemalloc.take_snapshot()

    def report(self, _sig: int, _frame: FrameType | None) -> None:
        grown: dict[str, Any] = {}
        if self.census is not None:
            after = census()
            diff = Counter({k: after[k] - self.census[k] for k in after | self.census})
            grown["types"] = [f"{n:+d} {kind}" for kind, n in diff.most_common(15)]
        if self.snapshot is not None:
            stats = tracemalloc.take_snapshot().compare_to(self.snapshot, "traceback")
            grown["places"] = [
                f"{s.size_diff / 1024:+.0f} KiB ({s.count_diff:+d}) "
                + " <- ".join(f"{f.filename.rsplit('/', 2)[-1]}:{f.lineno}" for f in s.traceback)
                for s in stats[:10]
            ]
        gc.collect()
        grown["at_mark"] = self.sample.as_dict() if self.sample else None
        grown["now"] = MemorySample.now(0.0).as_dict()
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(grown))
        os.replace(tmp, self.path)


def install() -> Marks | None:
    """Install the handlers when ``DESK_SOAK_MEMORY`` is set (call in the main thread, first)."""
    path = os.environ.get(ENV_PATH)
    if not path:
        return None
    trace = os.environ.get(ENV_TRACE) == "1"
    if trace:
        tracemalloc.start(8)
    marks = Marks(Path(path), trace)
    signal.signal(signal.SIGUSR1, marks.mark)
    signal.signal(signal.SIGUSR2, marks.report)
    print(f"soak host {os.getpid()}: memory marks to {path}", file=sys.stderr, flush=True)
    return marks
