"""How fast the desk renders a streamed reply, and how soon ``desk`` paints its first screen.

Stream ingest: the real app (headless, ``run_test``) over a real gateway and the demo model on
loopback, at 1,000, 5,000 and 20,000 tokens/s, for each stream shape (``--shapes``):
``document`` (a long Markdown document: headings, paragraphs, lists, code), ``paragraph`` (one
endless line of words, no block boundary), ``lines`` (one endless paragraph of short lines);
each as coalesced chunks, and with ``--flushed`` also one SSE event per token flushed on its
own, as llama-server streams (``flush_each_token``). The server cuts the reply at
``max_tokens``. Each screen update is measured where
Textual hands it to the terminal (``App._display``), and turned into terminal bytes as a real
terminal would need (headless Textual skips that step). Figures per rate:

- ``ingest_tokens_per_s``: tokens / (final text rendered - first token sent by the server);
- ``tail_ms``: last token sent by the server (loopback: received at once) -> final text rendered
  (the frame showing the reply finished: its last words, "idle");
- ``last_words_ms``: last token sent -> the first frame showing the reply's last characters
  (:attr:`ReplyBody.drawn_chars`: rendered text only, counted at each frame);
- ``tail_after_complete_ms``: the turn's ``message.complete`` reaching the UI -> rendered;
- ``tail_ui_cpu_ms``: CPU time of the UI thread over that same stretch (what the tail costs
  the UI, whatever the machine's load makes of it in wall-clock time);
- ``paints``, ``deltas``: screen updates and (coalesced) delta messages handled;
- ``ui_cpu_s``: CPU time of the UI thread from submit to the final paint (the agent, the
  gateway and the UI share one GIL: what the UI takes, the stream reader waits for).

With ``--repeats N`` each rate runs N times; the summary gives the median and the worst tail.
``--flushed-only`` runs only the flushed streams; ``--hog N`` runs N busy processes pinned to
the cores (``bench/load.py``) for the whole run, and the output gives the load average.

First paint: ``desk --base-url <demo> --model demo`` in a pseudo-terminal (120x40,
TERM=xterm-256color); the time from starting the process to the first output that contains the
prompt box's placeholder. Median and min of several runs.

Targets (DESIGN/issue 6): >= 5,000 tokens/s ingested with <= 100 ms tail; first paint <= 0.8 s.

The process runs with desk's GIL switch interval (``desk.__main__.SWITCH_INTERVAL_S``, or
``DESK_SWITCH_INTERVAL``), as ``desk`` itself does; Python's default (5 ms) would make every
hand-over between the stream's thread and the UI thread slower than the shipped app's.

The demo model runs in a forked process of its own, as a real server would (in this process it
competed with the UI for the GIL and slowed itself down); its ``reply_shape`` knob makes the
reply; everything else is the shipped code.

With ``--store`` the gateway saves to a SQLite file as the desk does (the streamed reply's
drafts included), so the cost of saving shows in the figures.

Run: ``python bench/stream_ingest.py [--rates 1000 5000 20000] [--shapes document paragraph
lines] [--flushed | --flushed-only] [--repeats 3] [--paint-runs 5] [--store] [--hog N]``;
prints JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import json
import multiprocessing
import os
import pty
import select
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from collections.abc import Sequence
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import httpx
from rich.console import RenderableType
from textual.screen import Screen

from agent.provider.client import ProviderConfig
from agent.store import SqliteStore
from contract.events import MessageComplete, MessageDelta
from demo_model.config import DemoConfig
from demo_model.server import DemoModelServer
from desk.__main__ import SWITCH_INTERVAL_S
from desk.app import DeskApp
from desk.config import ConnectionInfo
from desk.messages import GatewayMessage
from desk.widgets import AssistantReply, PromptInput
from desk.widgets.reply_body import ReplyBody
from desk.widgets.session_view import SessionView
from tui_gateway.gateway import Gateway, GatewayConfig

sys.path.insert(0, str(Path(__file__).resolve().parent))

from load import start_hogs, stop_hogs  # noqa: E402

BENCH_PROMPT = "bench: stream a long document"
PLACEHOLDER = b"sk anything"
"""The prompt box's placeholder as painted: its first cell carries the cursor's own style."""


class BenchView(SessionView):
    """The session view, counting what it handles for its :class:`BenchDesk`."""

    # Textual calls the handler of every class in the MRO: these only count, the view's own
    # handler (called after these) does the work; calling super() here would do it twice.
    def on_gateway_message(self, message: GatewayMessage) -> None:
        app = self.app
        if not isinstance(app, BenchDesk):
            return
        if isinstance(message.payload, MessageDelta):
            app.deltas += 1
        elif isinstance(message.payload, MessageComplete):
            app.complete_at = time.monotonic()
            app.complete_cpu = time.thread_time()


class BenchDesk(DeskApp):
    """The desk, recording when each screen update reaches the terminal."""

    view_class = BenchView

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.watched: AssistantReply | None = None
        self.final_paint_at: float | None = None
        self.complete_at: float | None = None
        self.complete_cpu: float | None = None
        self.paints = 0
        self.deltas = 0
        self.submit_cpu: float | None = None
        self.final_cpu: float | None = None
        self.drawn: list[tuple[float, int]] = []  # (paint time, reply characters it showed)

    def _display(self, screen: Screen[object], renderable: RenderableType | None) -> None:
        super()._display(screen, renderable)
        if renderable is None:
            return
        render = getattr(renderable, "render_segments", None)
        if callable(render):
            render(self.console)  # what a real terminal would be sent
        self.paints += 1
        ids = self.transcript.reply_turn_ids
        shown = self.transcript.reply(ids[-1]) if ids else None
        body = next(shown.query(ReplyBody).results(), None) if shown is not None else None
        if body is not None:
            self.drawn.append((time.monotonic(), body.drawn_chars))
        if self.final_paint_at is None and self.complete_at is not None:
            ids = self.transcript.reply_turn_ids
            reply = self.transcript.reply(ids[-1]) if ids else None
            if reply is not None and reply.outcome:
                self.watched = reply
                self.final_paint_at = time.monotonic()
                self.final_cpu = time.thread_time()


async def _wait(app: DeskApp, predicate: Any, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError("benchmark step timed out")
        await asyncio.sleep(0.002)


def _serve(config: DemoConfig, conn: Connection) -> None:
    """The demo model in a process of its own (as a real server is), until told to stop."""
    server = DemoModelServer(config)
    server.start()
    conn.send(server.base_url)
    conn.recv()
    server.stop()


class ServerProcess:
    """A forked demo model server (it inherits the long reply installed in this process)."""

    def __init__(self, config: DemoConfig) -> None:
        self._conn, child = multiprocessing.get_context("fork").Pipe()
        self._process = multiprocessing.get_context("fork").Process(
            target=_serve, args=(config, child), daemon=True
        )
        self._process.start()
        self.base_url: str = self._conn.recv()

    def chat_record(self) -> dict[str, Any]:
        """The one chat request's record (``time.monotonic()`` stamps, system-wide on Linux)."""
        root = self.base_url.removesuffix("/v1")
        records = httpx.get(f"{root}/demo/requests", timeout=5.0, trust_env=False).json()
        (record,) = [r for r in records["requests"] if "chat" in r["path"]]
        return dict(record)

    def stop(self) -> None:
        self._conn.send("stop")
        self._process.join(10.0)


async def measure_rate(
    rate: float,
    tokens: int,
    size: tuple[int, int],
    shape: str = "document",
    flushed: bool = False,
    *,
    store: bool = False,
) -> dict[str, Any]:
    """Stream ``tokens`` tokens at ``rate`` tokens/s into the desk, as a reply of ``shape``
    (one SSE event per token when ``flushed``); the figures of that run.

    With ``store`` the gateway saves to a SQLite file in a temporary folder, as the desk does
    (drafts of the streaming reply included); without, sessions stay in memory.
    """
    server = ServerProcess(
        DemoConfig(
            tokens_per_second=rate,
            max_tokens=tokens,
            n_ctx=tokens + 10_000,
            reply_shape=shape,
            flush_each_token=flushed,
        )
    )
    folder = tempfile.TemporaryDirectory(prefix="desk-bench-")
    gateway = Gateway(
        GatewayConfig(provider=ProviderConfig(base_url=server.base_url, model="demo")),
        store=SqliteStore(Path(folder.name) / "desk.db") if store else None,
    )
    info = ConnectionInfo("demo", server.base_url, is_demo=True, source="--demo")
    app = BenchDesk(gateway, info, handle_signals=False)
    app.animation_level = "none"
    try:
        async with app.run_test(size=size):
            box = app.query_one(PromptInput)
            box.text = BENCH_PROMPT
            app.submit_cpu = time.thread_time()
            # Not pilot.press: it waits for the app to be idle, which a stream never is.
            box.action_submit()
            await _wait(app, lambda: app.final_paint_at is not None, 120.0)
            reply = app.watched
            assert reply is not None
        record = server.chat_record()
    finally:
        gateway.shutdown(timeout_s=5.0)
        server.stop()
        folder.cleanup()
    first_token_at, completed_at = record["first_token_at"], record["completed_at"]
    assert app.final_paint_at is not None and app.complete_at is not None
    assert app.final_cpu is not None and app.submit_cpu is not None
    assert app.complete_cpu is not None
    sent = record["tokens_generated"]
    elapsed = app.final_paint_at - first_token_at
    whole = len(reply.text)
    last_shown_at = next(at for at, chars in app.drawn if chars >= whole)
    return {
        "rate_tokens_per_s": rate,
        "shape": shape,
        "flushed": flushed,
        "tokens": sent,
        "reply_chars": len(reply.text),
        "server_stream_s": round(completed_at - first_token_at, 3),
        "ingest_tokens_per_s": round(sent / elapsed),
        "tail_ms": round((app.final_paint_at - completed_at) * 1000, 1),
        "last_words_ms": round((last_shown_at - completed_at) * 1000, 1),
        "tail_after_complete_ms": round((app.final_paint_at - app.complete_at) * 1000, 1),
        "tail_ui_cpu_ms": round((app.final_cpu - app.complete_cpu) * 1000, 1),
        "ui_cpu_s": round(app.final_cpu - app.submit_cpu, 2),
        "paints": app.paints,
        "deltas": app.deltas,
        "outcome": reply.outcome,
        "store": store,
    }


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One rate's runs: the median run's figures, plus every run's tail and the worst."""
    ordered = sorted(runs, key=lambda run: float(run["tail_ms"]))
    median = dict(ordered[(len(ordered) - 1) // 2])
    median["runs"] = len(runs)
    median["tail_ms_each"] = [run["tail_ms"] for run in runs]
    median["tail_ms_worst"] = ordered[-1]["tail_ms"]
    median["last_words_ms_each"] = [run["last_words_ms"] for run in runs]
    median["tail_ui_cpu_ms_each"] = [run["tail_ui_cpu_ms"] for run in runs]
    median["ingest_tokens_per_s_min"] = min(run["ingest_tokens_per_s"] for run in runs)
    return median


def _set_size(fd: int, rows: int, cols: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def first_paint_once(base_url: str, timeout_s: float = 10.0) -> float:
    """Seconds from starting ``desk`` in a pty to the first output showing the prompt box."""
    master, slave = pty.openpty()
    _set_size(slave, 40, 120)
    env = dict(os.environ, TERM="xterm-256color", COLUMNS="120", LINES="40")
    env["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="desk-bench-config-")
    desk = Path(sys.executable).with_name("desk")
    command = [str(desk)] if desk.exists() else [sys.executable, "-m", "desk"]
    started = time.monotonic()
    proc = subprocess.Popen(
        [*command, "--base-url", base_url, "--model", "demo"],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        start_new_session=True,
    )
    os.close(slave)
    seen = b""
    painted: float | None = None
    try:
        while time.monotonic() - started < timeout_s:
            ready, _, _ = select.select([master], [], [], 0.05)
            if not ready:
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            seen += chunk
            if PLACEHOLDER in seen:
                painted = time.monotonic()
                break
        os.write(master, b"\x11")  # Ctrl+Q
        deadline = time.monotonic() + 10.0
        while proc.poll() is None and time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.05)
            if ready:
                try:
                    os.read(master, 65536)
                except OSError:
                    break
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(5.0)
        os.close(master)
    if painted is None:
        raise TimeoutError("desk painted nothing with the prompt box in time")
    return painted - started


def measure_first_paint(runs: int) -> dict[str, Any]:
    """Median and min of ``runs`` first paints (plus one warm-up run, not counted)."""
    server = DemoModelServer(DemoConfig(tokens_per_second=30.0))
    server.start()
    try:
        first_paint_once(server.base_url)  # warm the file cache and .pyc files
        times = [first_paint_once(server.base_url) for _ in range(runs)]
    finally:
        server.stop()
    return {
        "runs": runs,
        "median_s": round(statistics.median(times), 3),
        "min_s": round(min(times), 3),
        "max_s": round(max(times), 3),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rates", type=float, nargs="+", default=[1000.0, 5000.0, 20000.0])
    parser.add_argument("--shapes", nargs="+", default=["document", "paragraph", "lines"])
    parser.add_argument(
        "--flushed", action="store_true", help="also one SSE event per token, each flushed"
    )
    parser.add_argument(
        "--flushed-only", action="store_true", help="only one SSE event per token, flushed"
    )
    parser.add_argument("--hog", type=int, default=0, help="busy processes, pinned to cores")
    parser.add_argument("--seconds", type=float, default=2.0, help="stream length at each rate")
    parser.add_argument("--repeats", type=int, default=3, help="runs per rate")
    parser.add_argument("--paint-runs", type=int, default=5)
    parser.add_argument("--width", type=int, default=120)
    parser.add_argument("--height", type=int, default=40)
    parser.add_argument(
        "--store", action="store_true", help="save to a SQLite file, drafts included, as desk does"
    )
    args = parser.parse_args(argv)
    results: dict[str, Any] = {"cpus": os.cpu_count(), "python": sys.version.split()[0]}
    results["hog"] = args.hog
    interval = float(os.environ.get("DESK_SWITCH_INTERVAL", SWITCH_INTERVAL_S))
    sys.setswitchinterval(interval)  # as desk runs (desk/__main__.py)
    results["switch_interval_s"] = sys.getswitchinterval()
    results["load_before"] = os.getloadavg()
    size = (args.width, args.height)
    results["stream_ingest"] = []
    kinds = [True] if args.flushed_only else [False, True] if args.flushed else [False]
    hogs = start_hogs(args.hog)
    try:
        for shape in args.shapes:
            for flushed in kinds:
                for rate in args.rates:
                    tokens = int(rate * args.seconds)
                    runs = [
                        asyncio.run(
                            measure_rate(rate, tokens, size, shape, flushed, store=args.store)
                        )
                        for _ in range(max(1, args.repeats))
                    ]
                    summary = summarize(runs)
                    print(json.dumps(summary), file=sys.stderr, flush=True)
                    results["stream_ingest"].append(summary)
        if args.paint_runs > 0:
            results["first_paint"] = measure_first_paint(args.paint_runs)
    finally:
        stop_hogs(hogs)
    results["load_after"] = os.getloadavg()
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
