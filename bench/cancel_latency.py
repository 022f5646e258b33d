"""Stop latency of desk's gateway against the demo model, at random moments of each phase.

For each phase (waiting for the first byte, streaming, non-streaming, a running shell tool, a
console ``digest`` whose nested agent streams, a turn whose two child agents stream, a running
MCP tool call) it runs N stops at a random moment of the phase, and measures:

- ``server_close_ms``: from the stop to the moment the model server noticed the closed
  connection (the server's own record, both on the system-wide monotonic clock);
- ``worker_exit_ms``: from the stop to the turn's worker having returned (the gateway's receipt;
  for the console, the command's worker thread joined);
- ``child_gone_ms`` (tool phase): from the stop to the shell's process having exited (a pidfd
  held on it before the stop turns readable; waited for, not polled: a poll every 0.2 ms took
  the CPU the stop needs);
- ``shell_start_ms`` (tool phase): from a shell call's start to its first output under a spare
  keeper and guard (:mod:`agent.tools.spares`, started before the call as the gateway's is),
  ``cold_keeper_start_ms`` under a keeper started for the call, and ``bare_start_ms`` for the
  same ``/bin/sh`` started directly by asyncio; ``start_overhead_ms`` is the difference of the
  spare's and the bare p50 and p99;
- delegation phase: from the parent's stop to the model server noticing each child agent's
  closed connection (one background child, one foreground; both streaming), and to the
  parent's worker having exited (after its children).
- ``server_notified_ms`` (mcp phase): from the stop to the MCP server (the test server of
  ``tests/mcp/servers``, over stdio) seeing ``notifications/cancelled`` for the call, by its own
  report on the system-wide monotonic clock; ``worker_exit_ms`` there is the turn closed.

The process runs with desk's GIL switch interval (``DESK_SWITCH_INTERVAL`` overrides, as for
desk). ``--hog N`` runs N busy processes pinned to the cores (``bench/load.py``) meanwhile, in
the bench's own session (``--hog-apart``: in one of their own, as a model server started in
another terminal runs); the JSON gives the 1-minute load average before and after. Prints one
JSON object with p50/p95/p99/max per phase. Usage::

    .venv/bin/python bench/cancel_latency.py [--stops 100] [--seed 1] [--phases mcp,tool] [--hog 2]
        [--hog-apart]

The tool phase's figures over the rounds that shaped the guard and the shell tool's stop, and
what the stamps showed of each hop: ``docs/tool-stop-figures.md``. Since then the tool phase's
model server runs in a process of its own (as a person's does: in the bench's process its
threads and their garbage collections held the interpreter lock the stop needed).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import select
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from load import start_hogs, stop_hogs  # noqa: E402
from soak_processes import DemoProcess  # noqa: E402
from stats import percentiles  # noqa: E402

from agent.provider.client import ProviderConfig  # noqa: E402
from agent.stops import StopRequest, Surface  # noqa: E402
from contract.events import ChildStarted, MessageDelta, ToolOutput  # noqa: E402
from contract.mcp_events import McpServerChanged  # noqa: E402
from demo_model.config import DemoConfig  # noqa: E402
from demo_model.server import DemoModelServer  # noqa: E402
from desk.__main__ import SWITCH_INTERVAL_S  # noqa: E402
from tests.mcp.witness import Witness, server_command  # noqa: E402
from tests.support import EventLog  # noqa: E402
from tui_gateway.gateway import Gateway, GatewayConfig  # noqa: E402
from tui_gateway.settings.mcp_settings import McpApproval, McpServerSettings  # noqa: E402

PHASES = ("first_byte", "streaming", "non_streaming", "tool", "console", "delegation", "mcp")
TWO_CHILDREN = (
    "delegate in background: [demo tps=20] map the north\ndelegate: [demo tps=20] map the south"
)
MCP_PROMPT = 'call tool mcp__bench__slow with {"seconds": 600}'
TOOL_PROMPT = 'call tool shell with {"command": "echo pid=$$; sleep 30"}'


def pid_gone_ms(pidfd: int, since: float, deadline_s: float = 5.0) -> float | None:
    """Milliseconds from ``since`` until the process held by ``pidfd`` exited (a zombie counts),
    as the kernel says by making the pidfd readable: waited for, not polled (a poll would take
    the CPU the stop needs); the pidfd is closed. None when it runs on after ``deadline_s``."""
    try:
        readable, _, _ = select.select([pidfd], [], [], deadline_s)
    finally:
        os.close(pidfd)
    return (time.monotonic() - since) * 1000.0 if readable else None


def start_ms(runs: int, tmp: Path) -> dict[str, Any]:
    """A shell call's start to its first output: under a spare keeper (started ahead, as the
    gateway's ``shell`` tool has one), under a keeper started for the call, and bare."""
    import asyncio

    from agent.tools import ShellTool
    from agent.tools.spares import SparePool
    from tests.tools.shellkit import Output, context

    pool = SparePool(ShellTool().grace_s)

    async def guarded(tool: ShellTool) -> float:
        output = Output()
        started = time.monotonic()
        task = asyncio.ensure_future(tool.run({"command": "echo up"}, context(tmp, output)))
        await output.wait_for("up")
        took = (time.monotonic() - started) * 1000.0
        await task
        return took

    async def bare() -> float:
        started = time.monotonic()
        proc = await asyncio.create_subprocess_exec(
            "/bin/sh", "-c", "echo up", stdout=asyncio.subprocess.PIPE, start_new_session=True
        )
        assert proc.stdout is not None
        await proc.stdout.readline()
        took = (time.monotonic() - started) * 1000.0
        await proc.wait()
        return took

    async def measure() -> tuple[list[float], list[float], list[float]]:
        spare: list[float] = []
        cold: list[float] = []
        plain: list[float] = []
        for _ in range(runs):
            pool.warm()
            if pool.wait_ready(5.0):  # a turn's shell call comes after a model reply
                spare.append(await guarded(ShellTool(spares=pool)))
            cold.append(await guarded(ShellTool()))
            plain.append(await bare())
        return spare, cold, plain

    try:
        under, cold, plain = asyncio.run(measure())
    finally:
        pool.close()
    guarded_p, cold_p, bare_p = percentiles(under), percentiles(cold), percentiles(plain)
    return {
        "shell_start_ms": guarded_p,
        "cold_keeper_start_ms": cold_p,
        "bare_start_ms": bare_p,
        "start_overhead_ms": {
            key: round(guarded_p[key] - bare_p[key], 1) for key in ("p50", "p99") if key in bare_p
        },
    }


def run_tool_or_console(phase: str, stops: int, rng: random.Random, tmp: Path) -> dict[str, Any]:
    """Stops during a running shell tool, or during a console ``digest`` (nested agent).

    The tool phase's model server runs in a process of its own, as a person's does: in the
    bench's process its threads (and their garbage collections) held the interpreter lock the
    stop needs, which no desk has to share with its model server."""
    if phase == "tool":
        return _tool_stops(stops, rng, tmp)
    server = DemoModelServer(DemoConfig(tokens_per_second=200.0))
    server.start()
    provider = ProviderConfig(base_url=server.base_url, model="demo")
    (tmp / "file.md").write_text("word " * 2000)
    gateway = Gateway(GatewayConfig(provider=provider, approvals=False, cwd=tmp))
    log = EventLog()
    gateway.subscribe(log)
    pause = threading.Event()
    close_ms: list[float] = []
    exit_ms: list[float] = []
    session = gateway.session_create()
    try:
        for _ in range(stops):
            server.records.clear()
            command = gateway.console_run(session, "digest file.md")
            server.records.wait_for(lambda r: bool(r) and r[-1].first_token_at is not None, 5)
            pause.wait(rng.uniform(0.0, 0.3))
            stop = StopRequest.by_user(Surface.CONSOLE_CANCEL)
            gateway.console_cancel(command, stop)
            run = gateway.console.get(command)
            if run is not None and run.thread is not None:
                run.thread.join(10)
                exit_ms.append((time.monotonic() - stop.requested_at) * 1000.0)
            server.records.wait_for(lambda r: r[-1].slot_released_at is not None, 5)
            record = server.records.last()
            if record.peer_closed_at is not None:
                close_ms.append((record.peer_closed_at - stop.requested_at) * 1000.0)
    finally:
        gateway.shutdown(timeout_s=10)
        server.stop()
    return {
        "stop_to_worker_exit_ms": percentiles(exit_ms),
        "stop_to_server_close_ms": percentiles(close_ms),
    }


def _tool_stops(stops: int, rng: random.Random, tmp: Path) -> dict[str, Any]:
    """Stops during a running shell call, the model server in a process of its own."""
    server = DemoProcess(200.0)
    provider = ProviderConfig(base_url=server.base_url, model="demo")
    gateway = Gateway(GatewayConfig(provider=provider, approvals=False, cwd=tmp))
    log = EventLog()
    gateway.subscribe(log)
    pause = threading.Event()
    exit_ms: list[float] = []
    child_ms: list[float] = []
    session = gateway.session_create()
    try:
        for _ in range(stops):
            seen = len(log.of_type(ToolOutput))
            turn_id = gateway.prompt_submit(session, TOOL_PROMPT).turn_id
            log.wait_for(lambda ev, n=seen: len(log.of_type(ToolOutput)) > n)
            pid = int(log.of_type(ToolOutput)[-1].text.split("pid=")[1].split()[0])
            pidfd = os.pidfd_open(pid)  # held before the stop: the pid is not recycled
            pause.wait(rng.uniform(0.0, 0.2))
            stop = StopRequest.by_user(Surface.DESK_KEY)
            gateway.session_interrupt(session, stop, turn_id=turn_id)
            gone = pid_gone_ms(pidfd, stop.requested_at)
            complete = log.complete(turn_id, timeout=10)
            if gone is not None:
                child_ms.append(gone)
            if complete.stop is not None and complete.stop.exited_ms is not None:
                exit_ms.append(complete.stop.exited_ms)
    finally:
        gateway.shutdown(timeout_s=10)
        server.stop()
    figures: dict[str, Any] = {
        "stop_to_worker_exit_ms": percentiles(exit_ms),
        "stop_to_child_gone_ms": percentiles(child_ms),
    }
    figures.update(start_ms(min(stops, 50), tmp))
    return figures


def run_delegation(stops: int, rng: random.Random) -> dict[str, Any]:
    """Stops of a turn while its two child agents stream: parent stop -> each child's close."""
    server = DemoModelServer(DemoConfig(tokens_per_second=200.0, slots=3))
    server.start()
    provider = ProviderConfig(base_url=server.base_url, model="demo")
    gateway = Gateway(GatewayConfig(provider=provider, approvals=False))
    log = EventLog()
    gateway.subscribe(log)
    pause = threading.Event()
    close_ms: list[float] = []
    exit_ms: list[float] = []
    session = gateway.session_create()
    try:
        for _ in range(stops):
            server.records.clear()
            seen = len(log.of_type(ChildStarted))
            turn_id = gateway.prompt_submit(session, TWO_CHILDREN).turn_id
            log.wait_for(lambda ev, n=seen: len(log.of_type(ChildStarted)) >= n + 2, 10)
            children = {c.turn_id for c in log.of_type(ChildStarted)[seen:]}
            log.wait_for(
                lambda ev, kids=children: kids <= {d.turn_id for d in log.of_type(MessageDelta)},
                10,
            )
            pause.wait(rng.uniform(0.0, 0.3))
            stop = StopRequest.by_user(Surface.DESK_KEY)
            gateway.session_interrupt(session, stop, turn_id=turn_id)
            complete = log.complete(turn_id, timeout=10)
            server.records.wait_for(lambda recs: all(r.finished for r in recs), 5)
            for record in server.records.list():
                if record.messages[0].get("role") == "system" and record.peer_closed_at:
                    close_ms.append((record.peer_closed_at - stop.requested_at) * 1000.0)
            if complete.stop is not None and complete.stop.exited_ms is not None:
                exit_ms.append(complete.stop.exited_ms)
    finally:
        gateway.shutdown(timeout_s=10)
        server.stop()
    return {
        "stop_to_child_server_close_ms": percentiles(close_ms),
        "stop_to_parent_worker_exit_ms": percentiles(exit_ms),
    }


def run_mcp(stops: int, rng: random.Random, tmp: Path) -> dict[str, Any]:
    """Stops during an MCP tool call (the test server's ``slow``, over stdio)."""
    server = DemoModelServer(DemoConfig(tokens_per_second=200.0))
    server.start()
    witness = Witness()
    command = server_command(witness, "--name", "bench")
    mcp = McpServerSettings(
        name="bench",
        command=command[0],
        args=command[1:],
        startup_timeout_s=60.0,
        approval=McpApproval.ALWAYS,
    )
    provider = ProviderConfig(base_url=server.base_url, model="demo")
    gateway = Gateway(GatewayConfig(provider=provider, cwd=tmp, mcp_servers=(mcp,)))
    log = EventLog()
    gateway.subscribe(log)
    pause = threading.Event()
    closed_ms: list[float] = []
    notified_ms: list[float] = []
    try:
        ready = log.wait_for(
            lambda ev: any(p.state == "ready" for p in log.of_type(McpServerChanged)), 60
        )
        assert ready, "the MCP server did not start"
        session = gateway.session_create()
        for _ in range(stops):
            mark = witness.mark
            turn_id = gateway.prompt_submit(session, MCP_PROMPT).turn_id
            called = witness.wait_event("call", tool="slow", since=mark)
            pause.wait(rng.uniform(0.0, 0.2))
            stop = StopRequest.by_user(Surface.DESK_KEY)
            gateway.session_interrupt(session, stop, turn_id=turn_id)
            complete = log.complete(turn_id, timeout=10)
            if complete.stop is not None and complete.stop.exited_ms is not None:
                closed_ms.append(complete.stop.exited_ms)
            seen = witness.wait_event("cancelled", since=mark, request=called["request"])
            notified_ms.append((seen["at"] - stop.requested_at) * 1000.0)
    finally:
        gateway.shutdown(timeout_s=20)
        witness.close()
        server.stop()
    return {
        "stop_to_turn_closed_ms": percentiles(closed_ms),
        "stop_to_server_notified_ms": percentiles(notified_ms),
    }


def run_phase(phase: str, stops: int, rng: random.Random) -> dict[str, Any]:
    """Run ``stops`` stopped turns in one phase; returns the figures."""
    if phase == "delegation":
        return run_delegation(stops, rng)
    if phase == "mcp":
        with tempfile.TemporaryDirectory() as tmp:
            return run_mcp(stops, rng, Path(tmp))
    if phase in ("tool", "console"):
        with tempfile.TemporaryDirectory() as tmp:
            return run_tool_or_console(phase, stops, rng, Path(tmp))
    config = DemoConfig(tokens_per_second=200.0)
    if phase == "first_byte":
        config.prompt_delay_s = 0.5
    server = DemoModelServer(config)
    server.start()
    provider = ProviderConfig(base_url=server.base_url, model=config.model)
    gateway = Gateway(GatewayConfig(provider=provider, stream=phase != "non_streaming"))
    log = EventLog()
    gateway.subscribe(log)
    pause = threading.Event()  # never set: used only to wait a random moment
    close_ms: list[float] = []
    exit_ms: list[float] = []
    session = gateway.session_create()
    try:
        for i in range(stops):
            server.records.clear()
            turn_id = gateway.prompt_submit(session, f"benchmark prompt {i}").turn_id
            if phase == "streaming":
                log.wait_for(
                    lambda ev, t=turn_id: any(
                        isinstance(e.payload, MessageDelta) and e.payload.turn_id == t for e in ev
                    )
                )
                pause.wait(rng.uniform(0.0, 0.3))
            else:
                server.records.wait_for(lambda recs: bool(recs), timeout=5)
                pause.wait(rng.uniform(0.0, 0.4))
            stop = StopRequest.by_user(Surface.DESK_KEY)
            gateway.session_interrupt(session, stop, turn_id=turn_id)
            complete = log.complete(turn_id, timeout=10)
            server.records.wait_for(lambda recs: recs[-1].slot_released_at is not None, 5)
            record = server.records.last()
            if complete.status != "interrupted" or record.peer_closed_at is None:
                continue  # the reply finished before the stop: nothing to measure
            close_ms.append((record.peer_closed_at - stop.requested_at) * 1000.0)
            if complete.stop is not None and complete.stop.exited_ms is not None:
                exit_ms.append(complete.stop.exited_ms)
    finally:
        gateway.shutdown(timeout_s=10)
        server.stop()
    return {
        "stop_to_server_close_ms": percentiles(close_ms),
        "stop_to_worker_exit_ms": percentiles(exit_ms),
    }


def main() -> None:
    """Parse arguments, run every phase, print JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stops", type=int, default=100, help="stops per phase")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--phases", default=",".join(PHASES), help="comma-separated phases")
    parser.add_argument("--hog", type=int, default=0, help="busy processes pinned to cores")
    parser.add_argument(
        "--hog-apart",
        action="store_true",
        help="the busy processes in a session of their own (a model server in another terminal)",
    )
    args = parser.parse_args()
    rng = random.Random(args.seed)
    phases = [p for p in args.phases.split(",") if p]
    unknown = set(phases) - set(PHASES)
    if unknown:
        parser.error(f"unknown phases: {', '.join(sorted(unknown))} (known: {', '.join(PHASES)})")
    interval = float(os.environ.get("DESK_SWITCH_INTERVAL", SWITCH_INTERVAL_S))
    sys.setswitchinterval(interval)  # as desk runs (desk/__main__.py)
    hogs = start_hogs(args.hog, apart=args.hog_apart)
    try:
        load_before = os.getloadavg()[0]
        figures = {phase: run_phase(phase, args.stops, rng) for phase in phases}
        load_after = os.getloadavg()[0]
    finally:
        stop_hogs(hogs)
    head = {"bench": "cancel_latency", "stops_per_phase": args.stops, "hog": args.hog}
    head["hog_apart"] = args.hog_apart
    head["switch_interval_s"] = sys.getswitchinterval()
    load = {"load_1min": [round(load_before, 2), round(load_after, 2)]}
    print(json.dumps({**head, **load, **figures}, indent=2))


if __name__ == "__main__":
    main()
