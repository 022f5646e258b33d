"""How long ``desk run`` can be killed by SIGTERM with nothing written: from its exec until
desk's first line takes SIGTERM (``desk/__init__.py``), read from the process's ``SigCgt``.
The same line takes SIGINT: from the interpreter's own SIGINT handler until then, a Ctrl+C is
Python's ``KeyboardInterrupt`` (a traceback, no ``turn.completed``), so ``to_desk`` minus
``python_own`` is that window.

Before that only the interpreter runs: its own start (until it sets its SIGINT handler) and
``site`` (the installed packages' ``.pth`` files; an editable install's finder). The bench
launches the installed ``desk run --help`` ``--runs`` times and polls ``/proc/PID/status``
(about every 0.3 ms, sleeping between reads) from the moment ``Popen`` returns (the exec
done); it prints, in ms:

- ``python_own``: until the interpreter's SIGINT handler is set (its own start);
- ``to_desk``: until SIGTERM is caught (the window in which SIGTERM kills the run unsaid).

``--hog N`` runs N busy processes pinned to the cores meanwhile (``bench/load.py``); note the
load average, printed with the figures. Linux only.

    .venv/bin/python bench/run_signal_window.py [--runs 50] [--hog 2]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from load import start_hogs, stop_hogs  # noqa: E402
from stats import percentiles  # noqa: E402


def caught(pid: int) -> int | None:
    """The ``SigCgt`` mask of ``pid`` (None once it is gone)."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("SigCgt:"):
            return int(line.split()[1], 16)
    return None


def one_run(desk: str) -> tuple[float | None, float | None]:
    """One launch: ms until the interpreter's SIGINT handler, ms until desk's SIGTERM one."""
    proc = subprocess.Popen(
        [desk, "run", "--help"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    t0 = time.perf_counter()
    own = to_desk = None
    try:
        while to_desk is None:
            mask = caught(proc.pid)
            now = (time.perf_counter() - t0) * 1000
            if mask is None:
                break
            if own is None and mask >> (signal.SIGINT - 1) & 1:
                own = now
            if mask >> (signal.SIGTERM - 1) & 1:
                to_desk = now
            time.sleep(0.0002)  # the poller leaves the cores to the launch
    finally:
        proc.wait(30)
    return own, to_desk


def main() -> None:
    """Run the bench and print its JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--hog", type=int, default=0, help="busy processes pinned to cores")
    args = parser.parse_args()
    desk = str(Path(sys.executable).with_name("desk"))
    hogs = start_hogs(args.hog)
    try:
        runs = [one_run(desk) for _ in range(args.runs)]
    finally:
        stop_hogs(hogs)
    result = {
        "bench": "run_signal_window",
        "hog": args.hog,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "python_own_ms": percentiles([a for a, _ in runs if a is not None]),
        "to_desk_ms": percentiles([b for _, b in runs if b is not None]),
        "missed": sum(1 for _, b in runs if b is None),
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
