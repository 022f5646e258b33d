"""Stop latency of desk's gateway against the demo model, at random moments of each phase.

For each phase (waiting for the first byte, streaming, non-streaming) it runs N turns, stops
each one at a random moment with a user stop, and measures:

- ``server_close_ms``: from the stop to the moment the model server noticed the closed
  connection (the server's own record, both on the system-wide monotonic clock);
- ``worker_exit_ms``: from the stop to the turn's worker having returned (the gateway's receipt).

Prints one JSON object with p50/p95/p99/max per phase. Usage::

    .venv/bin/python bench/cancel_latency.py [--stops 100] [--seed 1]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import threading
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent.demo_model.config import DemoConfig  # noqa: E402
from agent.demo_model.server import DemoModelServer  # noqa: E402
from agent.provider.client import ProviderConfig  # noqa: E402
from agent.stops import StopRequest, Surface  # noqa: E402
from tests.support import EventLog  # noqa: E402
from tui_gateway.events import MessageDelta  # noqa: E402
from tui_gateway.gateway import Gateway, GatewayConfig  # noqa: E402

PHASES = ("first_byte", "streaming", "non_streaming")


def percentiles(values: list[float]) -> dict[str, float]:
    """p50/p95/p99/max of ``values`` (milliseconds), nearest-rank."""
    ordered = sorted(values)

    def rank(p: float) -> float:
        return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered)) - 1))]

    return {
        "n": len(ordered),
        "p50": round(rank(50), 2),
        "p95": round(rank(95), 2),
        "p99": round(rank(99), 2),
        "max": round(ordered[-1], 2),
        "mean": round(statistics.fmean(ordered), 2),
    }


def run_phase(phase: str, stops: int, rng: random.Random) -> dict[str, Any]:
    """Run ``stops`` stopped turns in one phase; returns the figures."""
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
    args = parser.parse_args()
    rng = random.Random(args.seed)
    figures = {phase: run_phase(phase, args.stops, rng) for phase in PHASES}
    print(
        json.dumps({"bench": "cancel_latency", "stops_per_phase": args.stops, **figures}, indent=2)
    )


if __name__ == "__main__":
    main()
