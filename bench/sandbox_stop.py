"""How fast a stop ends a ``shell`` call's ``sleep``, unsandboxed and under bubblewrap.

For each mode (``off``, ``workspace-write``) it runs N calls of ``echo ready; sleep 60`` in a
temporary workspace, and once the command has printed ``ready`` cancels the call (that is how
a hard stop reaches a tool) and measures:

- ``stop_ms``: from the cancel to the cancelled call having returned (its whole process group
  gone and reaped: what the stop receipt's worker exit waits for);
- ``start_ms``: from the call's start to ``ready`` (what bubblewrap adds to every command).

Prints one JSON object with p50/p95/p99/max per mode. Usage::

    .venv/bin/python bench/sandbox_stop.py [--stops 30]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from stats import percentiles  # noqa: E402

from agent.tools import ShellTool  # noqa: E402
from agent.tools.base import ToolContext  # noqa: E402
from agent.tools.sandbox import Sandbox, SandboxMode, bwrap_problem  # noqa: E402


async def one(mode: SandboxMode, cwd: Path) -> tuple[float, float]:
    """One call stopped once it runs: (stop_ms, start_ms)."""
    ready = asyncio.Event()

    def seen(text: str) -> None:
        if "ready" in text:
            ready.set()

    tool = ShellTool(grace_s=2.0, sandbox=Sandbox(mode))
    started = time.monotonic()
    task = asyncio.create_task(
        tool.run({"command": "echo ready; sleep 60"}, ToolContext(cwd=cwd, on_output=seen))
    )
    await asyncio.wait_for(ready.wait(), 30)
    running = time.monotonic()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    return (time.monotonic() - running) * 1000.0, (running - started) * 1000.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stops", type=int, default=30)
    args = parser.parse_args()
    problem = bwrap_problem()
    if problem is not None:
        print(json.dumps({"error": problem}))
        return
    out: dict[str, object] = {"stops": args.stops}
    with tempfile.TemporaryDirectory() as folder:
        for mode in ("off", "workspace-write"):
            stops, starts = [], []
            for _ in range(args.stops):
                stop_ms, start_ms = asyncio.run(one(mode, Path(folder)))  # type: ignore[arg-type]
                stops.append(stop_ms)
                starts.append(start_ms)
            out[mode] = {"stop_ms": percentiles(stops), "start_ms": percentiles(starts)}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
