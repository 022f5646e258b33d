"""Opening a 10,000-message session in the desk: time to first render and peak memory.

Builds a database with one session of N messages (user prompt, assistant tool call, tool
result, assistant reply; 40-2,000 characters each) through the store API, then, in a fresh
child process (so the build does not count in its peak RSS), opens it in the desk headless
(``app.run_test()``, the equivalent of ``desk --resume``) and measures:

- ``first_render_s``: from opening the store to the resumed transcript being painted
  (``SessionsController.resume_rendered_at``, set after the first refresh that shows it);
- ``first_render_cpu_s``: the CPU time the process used meanwhile (all threads; on a busy
  machine the wall time is mostly waiting for a core, this is the work);
- ``resume_ms``: the ``session.resume`` call alone (read and convert every message);
- ``peak_rss_mb``: the child's peak resident set size (``resource.getrusage``);
- ``blocks``: widgets rendered, and ``messages_rendered`` of ``messages``.

The desk renders only the last ``Startup.recent_messages`` (200) messages of a long session,
under an "N earlier messages · show more" line. ``--recent 0`` renders everything, to show why.

Prints one JSON object. Usage::

    .venv/bin/python bench/session_open.py [--messages 10000] [--recent 200] [--runs 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent.provider.client import ProviderConfig  # noqa: E402
from agent.provider.types import ChatMessage, ToolCall  # noqa: E402
from agent.store import NewMessage, SqliteStore  # noqa: E402
from tui_gateway.stops.process_exit import exit_process  # noqa: E402

SESSION = "big"
WORDS = ["the", "model", "reads", "a", "file", "and", "writes", "tests", "for", "desk", "**stop**"]


def _text(rng: random.Random) -> str:
    size = rng.randint(40, 2000)
    out: list[str] = []
    length = 0
    while length < size:
        word = rng.choice(WORDS)
        out.append(word)
        length += len(word) + 1
        if rng.random() < 0.02:
            out.append("\n\n- ")
    return " ".join(out)


def build(path: Path, messages: int, seed: int) -> None:
    """One session of ``messages`` messages in turns of four, written in one transaction."""
    rng = random.Random(seed)
    items: list[ChatMessage | NewMessage] = []
    n = 0
    while len(items) < messages:
        n += 1
        call = ToolCall(id=f"c{n}", name="read_file", arguments='{"path": "README.md"}')
        turn: list[ChatMessage | NewMessage] = [
            ChatMessage("user", _text(rng)),
            ChatMessage("assistant", "", tool_calls=(call,)),
            ChatMessage("tool", _text(rng), tool_call_id=call.id),
            NewMessage(ChatMessage("assistant", _text(rng)), partial=n % 10 == 0),
        ]
        items.extend(turn[: messages - len(items)])
    with SqliteStore(path, synchronous="NORMAL") as store:
        store.sessions.create_session(SESSION, title="big", model="demo", messages=items)


async def _open(path: Path, recent: int) -> dict[str, Any]:
    from desk.app import DeskApp
    from desk.config import ConnectionInfo
    from desk.startup import Startup
    from tui_gateway.gateway import Gateway, GatewayConfig

    provider = ProviderConfig(base_url="http://127.0.0.1:9/v1", model="demo")
    started = time.perf_counter()
    store = SqliteStore(path)
    gateway = Gateway(GatewayConfig(provider=provider), store=store)
    resumed_at = time.perf_counter()
    resumed = gateway.session_resume(SESSION)
    resume_ms = (time.perf_counter() - resumed_at) * 1000.0
    gateway.shutdown(timeout_s=5.0)  # that gateway only measured the resume call

    # what ``desk`` has imported by the time a resumed session renders (the view's modules
    # load with the first session, after the app's first frame), as the app's own import
    import desk.widgets.session_view  # noqa: F401

    started, cpu_started = time.perf_counter(), time.process_time()
    store = SqliteStore(path)
    gateway = Gateway(GatewayConfig(provider=provider), store=store)
    info = ConnectionInfo("demo", provider.base_url, is_demo=True)
    startup = Startup(resume=True, recent_messages=recent or len(resumed.transcript) + 1)
    app = DeskApp(gateway, info, handle_signals=False, startup=startup)
    app.animation_level = "none"
    async with app.run_test(size=(120, 40)) as pilot:
        while app.controllers.sessions.resume_rendered_at is None:
            await pilot.pause(0.005)
        first_render_s = app.controllers.sessions.resume_rendered_at - started
        first_render_cpu_s = time.process_time() - cpu_started
        blocks = len(app.transcript.children)
    gateway.shutdown(timeout_s=5.0)
    shown = min(len(resumed.transcript), recent or len(resumed.transcript))
    return {
        "first_render_s": round(first_render_s, 3),
        "first_render_cpu_s": round(first_render_cpu_s, 3),
        "resume_ms": round(resume_ms, 1),
        "blocks": blocks,
        "messages_rendered": shown,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1),
    }


def measure_in_child(path: Path, recent: int) -> dict[str, Any]:
    """Run one measurement in a fresh interpreter; returns its JSON figures."""
    out = subprocess.run(
        [sys.executable, __file__, "--measure", str(path), "--recent", str(recent)],
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        raise SystemExit(f"the measuring child failed:\n{out.stderr[-4000:]}")
    figures: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return figures


def main() -> None:
    """Build, measure in child processes, print JSON."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--recent", type=int, default=200, help="0 renders every message")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure is not None:
        print(json.dumps(asyncio.run(_open(args.measure, args.recent))), flush=True)
        exit_process(0)  # as desk itself ends: no thread runs while the interpreter finalizes
    with tempfile.TemporaryDirectory(prefix="desk-bench-") as tmp:
        path = Path(tmp) / "desk.db"
        built_at = time.perf_counter()
        build(path, args.messages, args.seed)
        build_s = time.perf_counter() - built_at
        runs = [measure_in_child(path, args.recent) for _ in range(args.runs)]
        renders = [r["first_render_s"] for r in runs]
        result = {
            "messages": args.messages,
            "recent": args.recent,
            "build_s": round(build_s, 2),
            "first_render_s": {
                "median": round(statistics.median(renders), 3),
                "max": round(max(renders), 3),
            },
            "first_render_cpu_s": {
                "median": round(statistics.median(r["first_render_cpu_s"] for r in runs), 3),
                "max": round(max(r["first_render_cpu_s"] for r in runs), 3),
            },
            "load_average": round(os.getloadavg()[0], 1),
            "resume_ms_median": round(statistics.median(r["resume_ms"] for r in runs), 1),
            "peak_rss_mb_max": max(r["peak_rss_mb"] for r in runs),
            "blocks": runs[0]["blocks"],
            "messages_rendered": runs[0]["messages_rendered"],
            "targets": {"first_render_s": 0.7, "peak_rss_mb": 200},
        }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
