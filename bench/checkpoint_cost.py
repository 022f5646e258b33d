"""What a turn's checkpoint costs a ``shell`` call: the workspace snapshot taken before the
command, and the comparison after it (nothing changed, then one file changed).

Runs on a copy-free workspace: the repository this script is in (a git work tree: git's tracked
and unignored files), or ``--root DIR``. Prints one JSON object: the number of files and bytes
kept, and p50/max of each step in milliseconds over ``--runs`` runs.

Usage::

    .venv/bin/python bench/checkpoint_cost.py [--runs 20] [--root DIR]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent.checkpoints.snapshot import changed_since, take_snapshot  # noqa: E402


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    args = parser.parse_args()
    root: Path = args.root.resolve()
    snap_ms: list[float] = []
    same_ms: list[float] = []
    changed_ms: list[float] = []
    kept = noted = size = 0
    with tempfile.NamedTemporaryFile(dir=root, prefix=".bench-", suffix=".txt") as probe:
        for _ in range(args.runs):
            start = time.perf_counter()
            snap = take_snapshot(root)
            snap_ms.append(_ms(start))
            kept, noted, size = len(snap.data), len(snap.noted), sum(map(len, snap.data.values()))
            start = time.perf_counter()
            assert changed_since(snap).files == []
            same_ms.append(_ms(start))
            Path(probe.name).write_text(f"{time.time()}\n")
            start = time.perf_counter()
            changed_since(snap)
            changed_ms.append(_ms(start))

    def figures(values: list[float]) -> dict[str, float]:
        return {"p50": round(statistics.median(values), 1), "max": round(max(values), 1)}

    print(
        json.dumps(
            {
                "root_files_kept": kept,
                "root_files_noted": noted,
                "bytes_kept": size,
                "snapshot_ms": figures(snap_ms),
                "compare_unchanged_ms": figures(same_ms),
                "compare_one_changed_ms": figures(changed_ms),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
