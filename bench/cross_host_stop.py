"""A stop through another gateway host, and throughput with one and two hosts on PostgreSQL.

Two gateways (host A and host B, each its own store with its own owner, pool, heartbeat and
stop listener) share one PostgreSQL database; the demo model server runs in a process of its
own (as a model server would), so it does not compete with host A for this process's GIL.
For each of N stops a turn streams on host A; at a random moment of the stream the stop is
asked of host B (``session.interrupt``: a stop row plus ``NOTIFY``), or of host A itself for
the same-host figure, and the benchmark measures:

- ``stop_to_server_close_ms``: from the stop being asked to the moment the demo model server
  noticed host A's connection close (the server's own record, ``GET /demo/requests``, on the
  system-wide monotonic clock).

Then throughput: M short turns (the demo model at 20,000 tokens/s) over 8 sessions, all on
host A, then split over hosts A and B; ``turns_per_s`` is turns over wall time.

Without ``--db`` a throwaway cluster is started (``initdb`` + ``pg_ctl``, as for the tests) and
removed after. Prints one JSON object. Usage::

    .venv/bin/python bench/cross_host_stop.py [--stops 100] [--turns 200] [--db URL] [--seed 1]
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import httpx  # noqa: E402
from stats import percentiles  # noqa: E402

from agent.provider.client import ProviderConfig  # noqa: E402
from agent.stops import StopRequest, Surface  # noqa: E402
from agent.store.postgres import PostgresStore  # noqa: E402
from contract.events import MessageDelta  # noqa: E402
from tests.pg_cluster import start_cluster  # noqa: E402
from tests.support import EventLog  # noqa: E402
from tui_gateway.gateway import Gateway, GatewayConfig  # noqa: E402


class ModelProcess:
    """The demo model server in a child process (``python -m demo_model``)."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "demo_model", "--port", "0", *args],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        self.base_url = self.proc.stdout.readline().strip()
        self.root = self.base_url.removesuffix("/v1")

    def closed_at(self, timeout_s: float = 10.0) -> float | None:
        """When the server saw the client close its last request's connection."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            records = httpx.get(self.root + "/demo/requests").json()["requests"]
            if records and records[-1]["peer_closed_at"] is not None:
                return float(records[-1]["peer_closed_at"])
            time.sleep(0.005)
        return None

    def reset(self) -> None:
        httpx.post(self.root + "/demo/reset")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def open_host(url: str, schema: str, owner: str, provider: ProviderConfig) -> Gateway:
    """A gateway on its own store of ``schema``, as host ``owner``."""
    store = PostgresStore(url, schema=schema, owner=owner, sweep_s=1.0)
    gateway = Gateway(GatewayConfig(provider=provider, approvals=False), store=store)
    store.stops.wait_listening(10)
    return gateway


def stops(url: str, count: int, rng: random.Random) -> dict[str, Any]:
    """Stops through host B and through host A of turns streaming on host A."""
    server = ModelProcess("--tps", "200", "--slots", "2")
    provider = ProviderConfig(base_url=server.base_url, model="demo")
    schema = f"bench_{uuid.uuid4().hex[:8]}"
    a = open_host(url, schema, "host-a:1:1", provider)
    b = open_host(url, schema, "host-b:2:2", provider)
    log = EventLog()
    a.subscribe(log)
    pause = threading.Event()  # never set: waits a random moment
    figures: dict[str, list[float]] = {"through_host_b": [], "same_host": []}
    session = a.session_create()
    try:
        for i in range(2 * count):
            where = "through_host_b" if i % 2 == 0 else "same_host"
            server.reset()
            turn_id = a.prompt_submit(session, "tell me a long story").turn_id
            log.wait_for(
                lambda events, t=turn_id: any(
                    isinstance(e.payload, MessageDelta) and e.payload.turn_id == t for e in events
                ),
                10.0,
            )
            pause.wait(rng.uniform(0.0, 0.05))
            stop = StopRequest.by_user(Surface.API_STOP, where)
            (b if where == "through_host_b" else a).session_interrupt(session, stop)
            closed = server.closed_at()
            log.complete(turn_id, timeout=10)
            if closed is not None:
                figures[where].append((closed - stop.requested_at) * 1000.0)
    finally:
        a.shutdown(timeout_s=10)
        b.shutdown(timeout_s=10)
        server.stop()
    return {where: {"stop_to_server_close_ms": percentiles(v)} for where, v in figures.items()}


def throughput(url: str, turns: int, hosts: int) -> float:
    """Turns per second for ``turns`` short turns over 8 sessions on ``hosts`` gateways."""
    server = ModelProcess("--tps", "20000", "--slots", "16")
    provider = ProviderConfig(base_url=server.base_url, model="demo")
    schema = f"bench_{uuid.uuid4().hex[:8]}"
    gateways = [open_host(url, schema, f"host-{n}:{n}:1", provider) for n in range(hosts)]
    logs = []
    for gateway in gateways:
        log = EventLog()
        gateway.subscribe(log)
        logs.append(log)
    sessions = [(n % hosts, gateways[n % hosts].session_create()) for n in range(8)]

    def one_session(index: int, per_session: int) -> None:
        host, session = sessions[index]
        for _ in range(per_session):
            turn = gateways[host].prompt_submit(session, "reply with exactly: ok").turn_id
            logs[host].complete(turn, timeout=30)

    try:
        started = time.monotonic()
        with ThreadPoolExecutor(len(sessions)) as pool:
            list(pool.map(lambda i: one_session(i, turns // len(sessions)), range(len(sessions))))
        elapsed = time.monotonic() - started
    finally:
        for gateway in gateways:
            gateway.shutdown(timeout_s=10)
        server.stop()
    return round((turns // len(sessions)) * len(sessions) / elapsed, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stops", type=int, default=100, help="stops of each kind")
    parser.add_argument("--turns", type=int, default=200, help="turns per throughput run")
    parser.add_argument("--db", help="a PostgreSQL URL (default: a throwaway cluster)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    cluster = None if args.db else start_cluster()
    url = args.db or (cluster.url if cluster is not None else "")
    try:
        result: dict[str, Any] = stops(url, args.stops, random.Random(args.seed))
        result["turns_per_s"] = {
            "1_host": throughput(url, args.turns, 1),
            "2_hosts": throughput(url, args.turns, 2),
        }
    finally:
        if cluster is not None:
            cluster.remove()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
