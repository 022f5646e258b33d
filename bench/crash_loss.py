"""What a SIGKILL loses of a streaming reply: the text on screen that the database does not have.

Each run starts ``desk run --db FILE PROMPT`` (the shipped entry point, its own process) against
the demo model streaming at 50 tokens/s, waits a random moment after the first character reached
its stdout (uniform over the reply's first seconds), and kills it with SIGKILL. Then:

- *on screen*: every character the child had written to its stdout (a pipe read to the end);
- *saved*: the draft of its open turn in the database file (what the next desk recovers as the
  partial reply), or the reply itself when it had ended before the kill;
- *lost*: characters on screen but not saved (0 when the draft is ahead of the screen), also
  as milliseconds of stream (lost characters / the stream's characters per second);
- *server_sent*: tokens the server had sent when it saw the connection close.

Target (issue 11): p99 of lost <= 100 ms of stream at 50 tokens/s. Prints one JSON object.
Usage::

    .venv/bin/python bench/crash_loss.py [--runs 60] [--seed 1] [--tps 50]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from stats import percentiles  # noqa: E402

from agent.store import SqliteStore  # noqa: E402
from demo_model.config import DemoConfig  # noqa: E402
from demo_model.server import DemoModelServer  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PROMPT = "write a long essay about the sea"


class Screen:
    """The child's stdout, read by a thread: every byte and when the first arrived."""

    def __init__(self, pipe: Any) -> None:
        self.data = b""
        self.first_at: float | None = None
        self.first = threading.Event()
        self._thread = threading.Thread(target=self._read, args=(pipe,), daemon=True)
        self._thread.start()

    def _read(self, pipe: Any) -> None:
        while chunk := pipe.read1(65536):
            if self.first_at is None:
                self.first_at = time.monotonic()
                self.first.set()
            self.data += chunk
        pipe.close()

    def join(self) -> str:
        self._thread.join(10)
        return self.data.decode("utf-8", errors="replace")


def one_run(server: DemoModelServer, folder: Path, index: int, after_s: float) -> dict[str, Any]:
    """Kill one ``desk run`` ``after_s`` seconds after its first character; the figures."""
    db = folder / f"run-{index}.db"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DESK_", "OPENAI_"))}
    env["PYTHONPATH"] = os.environ.get("PYTHONPATH", str(ROOT))  # another checkout: its code
    env["XDG_DATA_HOME"] = env["XDG_CONFIG_HOME"] = str(folder / "xdg")
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tui_gateway.wire",
            "run",
            "--base-url",
            server.base_url,
            "--model",
            "demo",
            "--db",
            str(db),
            PROMPT,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        env=env,
        cwd=folder,
    )
    screen = Screen(child.stdout)
    try:
        if not screen.first.wait(30):
            raise RuntimeError("desk run printed nothing in 30 s")
        assert screen.first_at is not None
        time.sleep(max(0.0, screen.first_at + after_s - time.monotonic()))
        os.kill(child.pid, signal.SIGKILL)
        killed_at = time.monotonic()
    finally:
        child.wait(10)
    shown = screen.join()
    record = server.records.wait_for_record(lambda r: r.peer_closed_at is not None, 10)
    sent = record.tokens_generated if record is not None else None
    with SqliteStore(db, recover=False) as store:
        saved = "".join(t.draft or "" for t in store.turns.open_turns())
        if not store.turns.open_turns():  # the reply had ended before the kill: it is saved
            saved = "".join(
                m.content
                for session in store.sessions.list_sessions()
                for m in store.transcript.active_messages(session.id)
                if m.role == "assistant"
            )
    server.records.clear()
    return {
        "after_s": round(killed_at - (screen.first_at or killed_at), 3),
        "shown_chars": len(shown),
        "saved_chars": len(saved),
        "lost_chars": max(0, len(shown) - len(saved)),
        "prefix": shown.startswith(saved) or saved.startswith(shown),
        "server_sent_tokens": sent,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--tps", type=float, default=50.0, help="tokens per second streamed")
    parser.add_argument(
        "--span", type=float, default=4.5, help="kill within this many seconds (the reply: ~5 s)"
    )
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    server = DemoModelServer(DemoConfig(tokens_per_second=args.tps, max_tokens=2000, slots=2))
    server.start()
    runs: list[dict[str, Any]] = []
    try:
        with tempfile.TemporaryDirectory(prefix="desk-crash-") as tmp:
            for index in range(args.runs):
                runs.append(one_run(server, Path(tmp), index, rng.uniform(0.05, args.span)))
    finally:
        server.stop()
    chars_per_s = sum(r["shown_chars"] for r in runs) / max(1e-9, sum(r["after_s"] for r in runs))
    lost_ms = [r["lost_chars"] / chars_per_s * 1000.0 for r in runs]
    print(
        json.dumps(
            {
                "runs": len(runs),
                "tokens_per_s": args.tps,
                "stream_chars_per_s": round(chars_per_s, 1),
                "lost_chars": percentiles([float(r["lost_chars"]) for r in runs]),
                "lost_ms_of_stream": percentiles(lost_ms),
                "saved_is_a_prefix_of_shown": all(r["prefix"] for r in runs),
                "target_p99_ms": 100.0,
                "each": runs,
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
