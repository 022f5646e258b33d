"""Load on ``desk serve``: concurrent SSE runs against the demo model, and what desk adds.

Two phases against one in-process demo model server (``slots`` = the number of streams, a fixed
pace of ``--tps`` tokens per second per stream, deterministic ``reply with exactly:`` replies):

1. *direct*: the same number of streams straight to the demo model with httpx (no desk);
2. *desk*: as many concurrent runs through ``desk serve`` (in-process, on loopback):
   ``POST /v1/sessions/{id}/runs``, read as server-sent events.

The demo model paces tokens on an absolute schedule (token ``k`` of a request is generated at
``first_token_at + k / tps``, from its own request record, on the system-wide monotonic clock),
so each token's latency is the time the client received it minus the time it was generated. For
desk, a token counts as received when the first ``message.delta`` that completes it arrives
(deltas are coalesced about every 30 ms). ``added_latency_ms`` is desk's latency minus the
direct one, per percentile: the cost of the agent, the gateway, its coalescing and the SSE hop.

Prints one JSON object. Usage::

    .venv/bin/python bench/gateway_load.py [--streams 64] [--tps 20] [--tokens 120]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from stats import percentiles  # noqa: E402

from agent.provider.client import ProviderConfig  # noqa: E402
from demo_model.config import DemoConfig  # noqa: E402
from demo_model.replies import tokenize  # noqa: E402
from demo_model.server import DemoModelServer  # noqa: E402
from tui_gateway.gateway import Gateway, GatewayConfig  # noqa: E402
from tui_gateway.wire.http_server import HttpServer  # noqa: E402

TOKEN = "bench-token"


@dataclass
class Stream:
    """One stream's prompt, expected reply and token receive times."""

    index: int
    reply: str
    received: list[float] = field(default_factory=list)
    events: int = 0
    deltas: int = 0
    exit_reason: str = ""

    @property
    def prompt(self) -> str:
        return f"reply with exactly: {self.reply}"


def make_streams(count: int, tokens: int) -> list[Stream]:
    words = " ".join(f"w{j}" for j in range(tokens - 1))
    return [Stream(i, f"r{i} {words}") for i in range(count)]


async def direct_one(client: httpx.AsyncClient, server: DemoModelServer, stream: Stream) -> None:
    body = {
        "model": "demo",
        "stream": True,
        "messages": [{"role": "user", "content": stream.prompt}],
    }
    async with client.stream("POST", server.base_url + "/chat/completions", json=body) as response:
        async for line in response.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            choices = chunk.get("choices") or []
            if choices and choices[0].get("delta", {}).get("content"):
                stream.received.append(time.monotonic())
                stream.deltas += 1
            stream.events += 1
    stream.exit_reason = "completed"


async def desk_one(client: httpx.AsyncClient, base: str, stream: Stream) -> None:
    session = (await client.post(base + "/v1/sessions")).json()["session_id"]
    ends = []
    offset = 0
    for piece in tokenize(stream.reply):
        offset += len(piece)
        ends.append(offset)
    text_len = 0
    url = f"{base}/v1/sessions/{session}/runs"
    async with client.stream("POST", url, json={"prompt": stream.prompt}) as response:
        name = ""
        async for line in response.aiter_lines():
            if line.startswith("event: "):
                name = line[7:]
                continue
            if not line.startswith("data: "):
                continue
            now = time.monotonic()
            stream.events += 1
            data = json.loads(line[6:])
            if name == "message.delta":
                stream.deltas += 1
                text_len += len(data["payload"]["text"])
                while len(stream.received) < len(ends) and ends[len(stream.received)] <= text_len:
                    stream.received.append(now)
            elif name == "message.complete":
                stream.exit_reason = data["payload"]["exit_reason"]


def token_latencies_ms(
    server: DemoModelServer, streams: list[Stream], tps: float, since_id: int
) -> list[tuple[float, float]]:
    """Per token: (its generation time, received minus generated in milliseconds)."""
    by_prompt = {s.prompt: s for s in streams}
    out: list[tuple[float, float]] = []
    for record in server.records.list():
        if record.id <= since_id or record.first_token_at is None:
            continue
        prompt = record.messages[-1].get("content") if record.messages else None
        stream = by_prompt.get(prompt) if isinstance(prompt, str) else None
        if stream is None:
            continue
        # The pacer's schedule starts when the headers are sent; token 0 is stamped itself.
        start = record.headers_sent_at if record.headers_sent_at is not None else 0.0
        for k, at in enumerate(stream.received):
            generated = (
                record.first_token_at if k == 0 else max(start + k / tps, record.first_token_at)
            )
            out.append((generated, (at - generated) * 1000.0))
    return out


async def phase(streams: list[Stream], one: Any) -> tuple[float, float]:
    """Run every stream at once; returns (start, wall seconds)."""
    limits = httpx.Limits(max_connections=len(streams) * 2, max_keepalive_connections=0)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with httpx.AsyncClient(limits=limits, timeout=120.0, headers=headers) as client:
        started = time.monotonic()
        await asyncio.gather(*(one(client, s) for s in streams))
        return started, time.monotonic() - started


def summary(
    streams: list[Stream],
    started: float,
    wall: float,
    latencies: list[tuple[float, float]],
    warmup_s: float,
) -> dict[str, Any]:
    events = sum(s.events for s in streams)
    deltas = sum(s.deltas for s in streams)
    tokens = sum(len(s.received) for s in streams)
    return {
        "wall_s": round(wall, 3),
        "events": events,
        "events_per_s": round(events / wall, 1),
        "delta_events": deltas,
        "delta_events_per_s": round(deltas / wall, 1),
        "tokens_received": tokens,
        "tokens_per_s": round(tokens / wall, 1),
        "completed": sum(s.exit_reason == "completed" for s in streams),
        "token_latency_ms": percentiles([ms for _at, ms in latencies]),
        "steady_token_latency_ms": percentiles(
            [ms for at, ms in latencies if at >= started + warmup_s]
        ),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=64, help="concurrent streams")
    parser.add_argument("--tps", type=float, default=20.0, help="tokens per second per stream")
    parser.add_argument("--tokens", type=int, default=120, help="tokens per reply (<= 390)")
    parser.add_argument(
        "--warmup", type=float, default=1.5, help="seconds left out of the steady figures"
    )
    args = parser.parse_args()
    config = DemoConfig(tokens_per_second=args.tps, slots=args.streams, max_tokens=400)
    with DemoModelServer(config, max_records=None) as server:
        direct_streams = make_streams(args.streams, args.tokens)
        started, wall = asyncio.run(phase(direct_streams, lambda c, s: direct_one(c, server, s)))
        latencies = token_latencies_ms(server, direct_streams, args.tps, 0)
        direct = summary(direct_streams, started, wall, latencies, args.warmup)
        last_id = max((r.id for r in server.records.list()), default=0)

        provider = ProviderConfig(base_url=server.base_url, model="demo")
        gateway = Gateway(
            GatewayConfig(provider=provider, tools=False, max_sessions=args.streams * 2)
        )
        http = HttpServer(gateway, TOKEN).start()
        try:
            desk_streams = make_streams(args.streams, args.tokens)
            started, wall = asyncio.run(
                phase(desk_streams, lambda c, s: desk_one(c, http.base_url, s))
            )
            latencies = token_latencies_ms(server, desk_streams, args.tps, last_id)
            desk = summary(desk_streams, started, wall, latencies, args.warmup)
        finally:
            http.stop()
        desk["deltas_dropped_under_backpressure"] = http.api.router.dropped

    def added(key: str) -> dict[str, float]:
        return {
            p: round(desk[key][p] - direct[key][p], 2)
            for p in ("p50", "p95", "p99", "mean")
            if p in desk[key] and p in direct[key]
        }

    result = {
        "streams": args.streams,
        "tokens_per_second_per_stream": args.tps,
        "tokens_per_reply": args.tokens,
        "coalesce_ms": gateway.config.coalesce_s * 1000.0,
        "direct": direct,
        "desk": desk,
        "added_latency_ms": added("token_latency_ms"),
        "added_steady_latency_ms": added("steady_token_latency_ms"),
    }
    print(json.dumps(result, indent=2))
    return 0 if desk["completed"] == args.streams else 1


if __name__ == "__main__":
    sys.exit(main())
