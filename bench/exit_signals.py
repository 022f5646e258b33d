"""Every desk process exits cleanly: how many of N runs of each entry point end by a signal.

A process whose daemon thread still runs while the interpreter finalizes can die of SIGSEGV
after it did all its work (``bench/session_open.py``'s measuring child did, 3 runs of 9). Each
entry point ends through :func:`tui_gateway.stops.process_exit.exit_process`; this runs each one
``--runs`` times against the demo model and counts how each run ended:

- ``run``: ``desk run PROMPT`` (one streamed turn, saved in a SQLite file);
- ``gateway``: ``desk gateway --stdio``: a session, a turn, then end of file on stdin;
- ``serve``: ``desk serve`` on a free port: listening, then SIGTERM (sent: exit code 0 expected);
- ``headless``: the desk app headless (``App.run_test``) over a gateway, a turn, then the end.

Prints one JSON object: per entry point, the runs, the exit codes seen and ``signal_deaths``
(runs that ended by a signal this script did not send). Usage::

    .venv/bin/python bench/exit_signals.py [--runs 200] [--only run,gateway,serve,headless]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from demo_model.config import DemoConfig  # noqa: E402
from demo_model.server import DemoModelServer  # noqa: E402

HEADLESS = """
import asyncio, sys
from agent.provider.client import ProviderConfig
from desk.app import DeskApp
from desk.config import ConnectionInfo
from tui_gateway.gateway import Gateway, GatewayConfig
from tui_gateway.stops.process_exit import exit_process

async def main(base_url: str) -> None:
    provider = ProviderConfig(base_url=base_url, model="demo")
    gateway = Gateway(GatewayConfig(provider=provider))
    app = DeskApp(gateway, ConnectionInfo("demo", base_url, is_demo=True), handle_signals=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(0.2)
    gateway.shutdown(timeout_s=5.0)

asyncio.run(main(sys.argv[1]))
print("done", flush=True)
exit_process(0)
"""


def _env(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT)
    for name in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        (home / name).mkdir(exist_ok=True)
        env[name] = str(home / name)
    return env


def _wire(command: str, base_url: str, *args: str) -> list[str]:
    base = [sys.executable, "-m", "tui_gateway.wire", command, "--base-url", base_url]
    return [*base, "--model", "demo", *args]


def one_run(kind: str, base_url: str, home: Path) -> int:
    """One run of ``kind``; its return code (negative: the signal that ended it)."""
    env = _env(home)
    db = str(home / "desk.db")
    if kind == "run":
        argv = _wire("run", base_url, "--db", db, "reply with exactly: one two three")
        return subprocess.run(argv, env=env, capture_output=True, timeout=120).returncode
    if kind == "gateway":
        lines = [
            {"jsonrpc": "2.0", "id": 1, "method": "session.create", "params": {}},
        ]
        child = subprocess.Popen(
            _wire("gateway", base_url, "--stdio", "--db", db),
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert child.stdin is not None and child.stdout is not None
        child.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in lines))
        child.stdin.flush()
        child.stdout.readline()  # gateway.ready
        child.stdin.close()
        child.stdout.read()
        return child.wait(120)
    if kind == "serve":
        child = subprocess.Popen(
            _wire("serve", base_url, "--port", "0", "--db", db),
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        assert child.stdout is not None
        deadline = time.monotonic() + 60
        seen = b""
        while b"http://" not in seen and time.monotonic() < deadline:
            ready, _, _ = select.select([child.stdout], [], [], 1.0)
            if ready:
                chunk = os.read(child.stdout.fileno(), 4096)
                if not chunk:
                    break
                seen += chunk
        child.send_signal(signal.SIGTERM)  # sent: the clean exit it asks for is code 0
        child.stdout.read()
        return child.wait(120)
    argv = [sys.executable, "-c", HEADLESS, base_url]
    return subprocess.run(argv, env=env, capture_output=True, timeout=120, cwd=ROOT).returncode


def main() -> None:
    """Run every entry point ``--runs`` times; print JSON."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--only", default="run,gateway,serve,headless")
    args = parser.parse_args()
    server = DemoModelServer(DemoConfig(tokens_per_second=0.0))
    server.start()
    result: dict[str, object] = {"runs": args.runs}
    try:
        for kind in args.only.split(","):
            codes: collections.Counter[int] = collections.Counter()
            started = time.perf_counter()
            for _ in range(args.runs):
                with tempfile.TemporaryDirectory(prefix="desk-exit-") as tmp:
                    codes[one_run(kind, server.base_url, Path(tmp))] += 1
            result[kind] = {
                "codes": {str(code): count for code, count in sorted(codes.items())},
                "signal_deaths": sum(n for code, n in codes.items() if code < 0),
                "seconds": round(time.perf_counter() - started, 1),
            }
    finally:
        server.stop()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
