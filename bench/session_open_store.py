"""Session-open cost of the SQLite store: a 10,000-message session read back.

Builds a database with one session of N messages (user / assistant / tool-call / tool-result
turns, 40-2,000 characters each), then measures, on a freshly opened store:

- ``open_ms``: ``SqliteStore(path)`` on the existing file (migration check + crash recovery);
- ``load_history_ms`` / ``active_messages_ms`` / ``all_messages_ms``: the first call after the
  open (``first``) and the median / p95 of ``--repeat`` further calls;
- ``append_ms`` and ``turn_ms``: one ``append_message`` commit, and one
  ``start_turn`` + ``record_turn_end`` pair, with ``synchronous`` FULL and NORMAL.

Prints one JSON object. Usage::

    .venv/bin/python bench/session_open_store.py [--messages 10000] [--repeat 20]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent.provider.types import ChatMessage, ToolCall  # noqa: E402
from agent.store import SqliteStore, TurnOutcome  # noqa: E402
from agent.store.sqlite.connections import Synchronous  # noqa: E402

DONE = TurnOutcome(status="completed", exit_reason="completed")


def _text(rng: random.Random) -> str:
    words = ["the", "model", "reads", "a", "file", "and", "writes", "tests", "for", "desk"]
    size = rng.randint(40, 2000)
    out: list[str] = []
    length = 0
    while length < size:
        word = rng.choice(words)
        out.append(word)
        length += len(word) + 1
    return " ".join(out)


def build(path: Path, messages: int, seed: int) -> None:
    """One session of ``messages`` messages, written in turns of four."""
    rng = random.Random(seed)
    with SqliteStore(path, synchronous="NORMAL") as store:
        store.sessions.create_session(
            "big", title="big", messages=[ChatMessage("system", "be brief")]
        )
        written = 1
        n = 0
        while written < messages:
            n += 1
            turn = f"t{n}"
            store.turns.start_turn(turn, "big", _text(rng))
            call = ToolCall(id=f"c{n}", name="read_file", arguments='{"path": "README.md"}')
            batch = [
                ChatMessage("assistant", "", tool_calls=(call,)),
                ChatMessage("tool", _text(rng), tool_call_id=call.id),
                ChatMessage("assistant", _text(rng)),
            ]
            batch = batch[: max(0, messages - written - 1)]
            store.turns.record_turn_end(turn, batch, DONE)
            written += 1 + len(batch)


def timed(fn: Callable[[], object]) -> float:
    """Milliseconds one call of ``fn`` takes."""
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000.0


def figures(samples: list[float]) -> dict[str, float]:
    """Median, p95 and max of ``samples`` (milliseconds)."""
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * len(ordered)) - 1)]
    return {
        "median": round(statistics.median(ordered), 3),
        "p95": round(p95, 3),
        "max": round(ordered[-1], 3),
    }


def write_costs(folder: Path, sync: Synchronous, repeat: int) -> dict[str, Any]:
    """Commit latency of small writes under one ``synchronous`` setting."""
    with SqliteStore(folder / f"writes-{sync}.db", synchronous=sync) as store:
        store.sessions.create_session("w")
        appends = [
            timed(lambda: store.transcript.append_message("w", ChatMessage("user", "x" * 500)))
            for _ in range(repeat * 5)
        ]
        turns: list[float] = []
        for i in range(repeat * 5):

            def turn(i: int = i) -> None:
                store.turns.start_turn(f"t{i}", "w", "prompt")
                store.turns.record_turn_end(f"t{i}", [ChatMessage("assistant", "y" * 800)], DONE)

            turns.append(timed(turn))
    return {"append_ms": figures(appends), "turn_ms": figures(turns)}


def main() -> None:
    """Build, measure, print JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="desk-bench-") as tmp:
        folder = Path(tmp)
        path = folder / "desk.db"
        started = time.perf_counter()
        build(path, args.messages, args.seed)
        build_s = time.perf_counter() - started
        out: dict[str, Any] = {
            "sqlite": __import__("sqlite3").sqlite_version,
            "messages": args.messages,
            "db_bytes": path.stat().st_size + Path(f"{path}-wal").stat().st_size
            if Path(f"{path}-wal").exists()
            else path.stat().st_size,
            "build_s": round(build_s, 2),
        }
        opened_at = time.perf_counter()
        store = SqliteStore(path)
        out["open_ms"] = round((time.perf_counter() - opened_at) * 1000.0, 3)
        try:
            history = store.transcript.load_history("big")
            assert len(history) == args.messages, len(history)
            for name, fn in (
                ("load_history_ms", lambda: store.transcript.load_history("big")),
                ("active_messages_ms", lambda: store.transcript.active_messages("big")),
                ("all_messages_ms", lambda: store.transcript.all_messages("big")),
            ):
                # "first" is measured on a second store opened cold, so its caches are empty.
                with SqliteStore(path) as cold:
                    read = getattr(cold.transcript, name[:-3])
                    first = timed(lambda read=read: read("big"))
                samples = [timed(fn) for _ in range(args.repeat)]
                out[name] = {"first": round(first, 3), **figures(samples)}
        finally:
            store.close()
        out["writes"] = {
            sync: write_costs(folder, sync, args.repeat) for sync in ("FULL", "NORMAL")
        }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
