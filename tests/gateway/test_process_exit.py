"""A desk process ends with no thread of its own running while the interpreter finalizes.

The gateway's shutdown leaves no thread of the model server (its checking thread, its retry
timer) behind, and :func:`tui_gateway.stops.process_exit.exit_process` joins what is left or, when a
thread cannot end (blocked in a read), ends the process without finalizing, with its code.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

from agent.provider.client import ProviderConfig
from contract.server_events import ServerState
from tests.support import poll_until
from tests.wire.kit import ROOT, child_env
from tui_gateway.gateway import Gateway, GatewayConfig


def test_a_shutdown_leaves_no_thread_of_the_model_server(tmp_path: Path) -> None:
    """Nothing answers on port 9: the checking thread fails and arms its retry timer."""
    provider = ProviderConfig(base_url="http://127.0.0.1:9/v1", model="demo")
    before = set(threading.enumerate())
    gateway = Gateway(GatewayConfig(provider=provider, cwd=tmp_path))
    gateway.server.check()
    assert poll_until(lambda: gateway.server.status().state is ServerState.UNREACHABLE, 30)
    report = gateway.shutdown(timeout_s=5)
    assert report.threads_left == []
    left = [t.name for t in set(threading.enumerate()) - before if t.is_alive()]
    assert left == []


EXITS = """
import atexit, os, sys, threading
from tui_gateway.stops.process_exit import exit_process
atexit.register(lambda: print("finalized", flush=True))
mode = sys.argv[1]
if mode == "blocked":
    read_end, _write_end = os.pipe()
    threading.Thread(target=os.read, args=(read_end, 1), daemon=True, name="blocked").start()
else:
    threading.Thread(target=lambda: None, daemon=True, name="quick").start()
print("work done", flush=True)
exit_process(3, timeout_s=0.5)
"""


def run_exit(mode: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-c", EXITS, mode]
    return subprocess.run(
        argv, capture_output=True, text=True, env=child_env(), cwd=ROOT, timeout=60
    )


def test_a_process_whose_threads_end_exits_normally_with_its_code() -> None:
    done = run_exit("quick")
    assert done.returncode == 3
    assert done.stdout == "work done\nfinalized\n"


def test_a_thread_that_cannot_end_does_not_run_into_finalization() -> None:
    done = run_exit("blocked")
    assert done.returncode == 3  # its own code, never a signal
    assert done.stdout == "work done\n"  # flushed; the interpreter was not finalized
