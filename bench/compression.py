"""Compression bookkeeping time and cancel -> lease released latency.

Bookkeeping is everything a compression does but the model call: taking the lease, planning
head / middle / tail, building the summary request, the commit transaction (archive the middle,
insert the summary, release the lease) and rebuilding the transcript. It is measured for
transcripts of 1,000, 10,000 and 100,000 messages in a SQLite store, as the attempt's total
time minus the time of its summary request (from the ``summarize`` progress event to the
``commit`` one). Cancel latency is from a stop during the summary to the lease row being gone.

Usage::

    .venv/bin/python bench/compression.py [--sizes 1000 10000 100000] [--cancels 20]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent.compression import CompressionProgress, Compressor  # noqa: E402
from agent.compression.backend import StoreBackend  # noqa: E402
from agent.provider.client import ChatClient, ProviderConfig  # noqa: E402
from agent.provider.types import ChatMessage  # noqa: E402
from agent.stops import StopRequest, Surface  # noqa: E402
from agent.store import SqliteStore  # noqa: E402
from demo_model.config import DemoConfig  # noqa: E402
from demo_model.server import DemoModelServer  # noqa: E402


def transcript(n: int) -> list[ChatMessage]:
    """``n`` messages: a system prompt, then alternating questions and answers (~60 tokens)."""
    out = [ChatMessage("system", "You are a careful assistant.")]
    for i in range(n - 1):
        role = "user" if i % 2 == 0 else "assistant"
        out.append(ChatMessage(role, f"message {i}: " + "words " * 40))  # type: ignore[arg-type]
    return out


def bookkeeping(n: int, provider: ProviderConfig, folder: Path) -> dict[str, Any]:
    """One compression of an ``n``-message session; returns its timings in milliseconds."""
    store = SqliteStore(folder / f"bench-{n}.db")
    session = store.sessions.create_session(title="bench", model="demo", messages=transcript(n)).id
    history = store.transcript.load_history(session)
    marks: dict[str, float] = {}

    def on_progress(progress: CompressionProgress) -> None:
        marks.setdefault(progress.phase, time.perf_counter())

    compressor = Compressor(
        ChatClient(provider),
        StoreBackend(store),
        session,
        history,
        window_tokens=8192,
        listener=on_progress,
    )
    started = time.perf_counter()
    outcome = compressor.run()
    total = time.perf_counter() - started
    if "commit" not in marks:
        raise SystemExit(f"{n} messages: compression ended {outcome.status}: {outcome.message}")
    model_call = marks["commit"] - marks["summarize"]
    store.close()
    return {
        "messages": n,
        "status": outcome.status,
        "bookkeeping_ms": round((total - model_call) * 1000.0, 1),
        "model_call_ms": round(model_call * 1000.0, 1),
        "commit_ms": round((marks.get("done", time.perf_counter()) - marks["commit"]) * 1000, 1),
    }


def cancel_latency(provider: ProviderConfig, folder: Path, runs: int) -> dict[str, Any]:
    """Stops during the summary; milliseconds from each stop to the lease row being gone."""
    store = SqliteStore(folder / "cancel.db")
    session = store.sessions.create_session(title="c", model="demo", messages=transcript(200)).id
    samples: list[float] = []
    for _ in range(runs):
        streaming = threading.Event()

        def on_progress(progress: CompressionProgress, flag: threading.Event = streaming) -> None:
            if progress.phase == "summarize" and progress.tokens_out >= 3:
                flag.set()

        compressor = Compressor(
            ChatClient(provider),
            StoreBackend(store),
            session,
            store.transcript.load_history(session),
            window_tokens=8192,
            listener=on_progress,
        )
        thread = threading.Thread(target=compressor.run)
        thread.start()
        streaming.wait(10)
        stop = StopRequest.by_user(Surface.DESK_BUTTON)
        compressor.interrupt(stop)
        thread.join(10)
        if store.leases.get_lease(session) is None:
            samples.append((time.monotonic() - stop.requested_at) * 1000.0)
    store.close()
    ordered = sorted(samples)
    return {
        "n": len(ordered),
        "p50_ms": round(statistics.median(ordered), 2),
        "p99_ms": round(ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))], 2),
        "max_ms": round(ordered[-1], 2),
    }


def main() -> None:
    """Parse arguments, measure, print JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--cancels", type=int, default=20)
    args = parser.parse_args()
    fast = DemoModelServer(DemoConfig(tokens_per_second=0))
    slow = DemoModelServer(DemoConfig(tokens_per_second=100.0))
    fast.start()
    slow.start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            provider = ProviderConfig(base_url=fast.base_url, model="demo")
            sizes = [bookkeeping(n, provider, folder) for n in args.sizes]
            slow_provider = ProviderConfig(base_url=slow.base_url, model="demo")
            cancel = cancel_latency(slow_provider, folder, args.cancels)
    finally:
        fast.stop()
        slow.stop()
    print(
        json.dumps(
            {"bench": "compression", "bookkeeping": sizes, "cancel_to_lease_released": cancel},
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
