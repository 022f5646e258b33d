"""What saving a streaming reply costs the gateway: CPU time and delay, with and without a store.

The demo model streams a long document in a process of its own (as in ``stream_ingest.py``) at
1,000, 5,000 and 20,000 tokens/s; a gateway in this process runs the turn, saving to a SQLite
file in a temporary folder (``store``) or to nothing (``memory``). Per run:

- ``cpu_s``: CPU time of this process (every thread: the turn's worker, the writer thread that
  writes the drafts, event delivery) from submit to ``message.complete``; unlike wall-clock
  figures it hardly moves when other programs load the machine;
- ``tail_ms``: last token sent by the server -> ``message.complete`` received;
- ``drafts``: draft writes the store saw (``turns.save_draft`` calls).

Figures are medians of ``--repeats`` runs. Compare two checkouts by running this file with
``PYTHONPATH`` set to each. Prints JSON. Usage::

    .venv/bin/python bench/draft_cost.py [--rates 1000 5000 20000] [--seconds 2] [--repeats 5]
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

from stream_ingest import (  # noqa: E402
    BENCH_PROMPT,
    ServerProcess,
    _install_long_reply,
    long_document,
)

from agent.provider.client import ProviderConfig  # noqa: E402
from agent.store import SqliteStore  # noqa: E402
from contract.events import GatewayEvent, MessageComplete  # noqa: E402
from demo_model.config import DemoConfig  # noqa: E402
from tui_gateway.gateway import Gateway, GatewayConfig  # noqa: E402


class CountingStore(SqliteStore):
    """The SQLite store, counting draft writes (its turns group wrapped, nothing else)."""

    drafts = 0

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        real = self.turns.save_draft

        def counted(turn_id: str, text: str, *, wait: bool = True) -> bool:
            CountingStore.drafts += 1
            return real(turn_id, text, wait=wait)

        self.turns.save_draft = counted  # type: ignore[method-assign]


def one_run(rate: float, tokens: int, *, store: bool) -> dict[str, Any]:
    server = ServerProcess(
        DemoConfig(tokens_per_second=rate, max_tokens=tokens, n_ctx=tokens + 10_000)
    )
    folder = tempfile.TemporaryDirectory(prefix="desk-bench-")
    CountingStore.drafts = 0
    gateway = Gateway(
        GatewayConfig(provider=ProviderConfig(base_url=server.base_url, model="demo")),
        store=CountingStore(Path(folder.name) / "desk.db") if store else None,
    )
    done = threading.Event()
    seen: dict[str, float] = {}

    def on_event(event: GatewayEvent) -> None:
        if isinstance(event.payload, MessageComplete):
            seen["complete_at"] = time.monotonic()
            done.set()

    gateway.subscribe(on_event)
    try:
        session = gateway.session_create()
        cpu = time.process_time()
        gateway.prompt_submit(session, BENCH_PROMPT)
        assert done.wait(120), "the turn never completed"
        cpu = time.process_time() - cpu
        record = server.chat_record()
    finally:
        gateway.shutdown(timeout_s=10.0)
        server.stop()
        folder.cleanup()
    return {
        "cpu_s": cpu,
        "tail_ms": (seen["complete_at"] - record["completed_at"]) * 1000.0,
        "drafts": CountingStore.drafts,
        "tokens": record["tokens_generated"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rates", type=float, nargs="+", default=[1000.0, 5000.0, 20000.0])
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    _install_long_reply(long_document(int(max(args.rates) * args.seconds)))
    results: list[dict[str, Any]] = []
    for rate in args.rates:
        tokens = int(rate * args.seconds)
        for store in (False, True):
            runs = [one_run(rate, tokens, store=store) for _ in range(max(1, args.repeats))]
            results.append(
                {
                    "rate_tokens_per_s": rate,
                    "saving": "store" if store else "memory",
                    "tokens": runs[0]["tokens"],
                    "cpu_s": round(statistics.median(r["cpu_s"] for r in runs), 3),
                    "cpu_s_each": [round(r["cpu_s"], 3) for r in runs],
                    "tail_ms": round(statistics.median(r["tail_ms"] for r in runs), 1),
                    "drafts": statistics.median(r["drafts"] for r in runs),
                }
            )
    print(json.dumps({"runs_per_figure": args.repeats, "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
