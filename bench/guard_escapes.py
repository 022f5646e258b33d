"""Processes that try to outlive desk: how many of N tries of each escape leave a process behind.

Each try runs one escape of :mod:`tests.tools.escapekit` (a ``setsid`` child ignoring SIGTERM,
a double-forked daemon, a command that kills its guard with ``kill -9 $PPID``, an MCP server's
``setsid`` child) under a stand-in for desk (desk's own shell tool or MCP transport, in a fork
of this process with the modules already imported), then ends the stand-in by a quit or by
SIGKILL (``--endings`` also takes ``term`` and ``hup``) and waits (30 s at most) for every
escapee and every process that was below the stand-in to exit. Prints JSON: per escape and
ending, the tries and how many left a process.

Usage::

    .venv/bin/python bench/guard_escapes.py [--tries 100] [--escapes kill-guard,double-fork]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import agent.mcp.transport  # noqa: E402,F401  (imported once, before the forks)
from tests.tools.escapekit import ESCAPES, try_escape  # noqa: E402

ENDINGS = ("quit", "kill")


def main() -> None:
    """Parse arguments, run the tries, print JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tries", type=int, default=100, help="tries per escape and ending")
    parser.add_argument("--escapes", default=",".join(ESCAPES), help="comma-separated escapes")
    parser.add_argument("--endings", default=",".join(ENDINGS), help="quit, kill, term, hup")
    args = parser.parse_args()
    results: dict[str, dict[str, object]] = {}
    for name in [e for e in args.escapes.split(",") if e]:
        for ending in [e for e in args.endings.split(",") if e]:
            escaped = 0
            left: list[int] = []
            started = time.monotonic()
            for _ in range(args.tries):
                with tempfile.TemporaryDirectory() as tmp:
                    survivors = try_escape(name, ending, Path(tmp), fork=True)
                if survivors:
                    escaped += 1
                    left.extend(sorted(survivors))
            results[f"{name}/{ending}"] = {
                "tries": args.tries,
                "left_a_process": escaped,
                "pids_left": left[:20],
                "seconds": round(time.monotonic() - started, 1),
            }
            print(json.dumps({f"{name}/{ending}": results[f"{name}/{ending}"]}), file=sys.stderr)
    print(json.dumps({"bench": "guard_escapes", "results": results}, indent=2))


if __name__ == "__main__":
    main()
