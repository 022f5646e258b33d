"""Esc N ms after Enter: every turn stopped, and booked to the person.

The real ``desk`` runs in a pseudo-terminal (:mod:`pty_desk`) against the demo model in a
process of its own, streaming as llama-server does (one SSE event per token, each flushed on
its own). The bench types a prompt and Enter, writes the ESC byte N ms later (each gap of
``--enter-esc-ms`` in turn, ``--presses`` presses in all), with ``--hog`` busy processes pinned
to the cores (:mod:`load`), and reads desk's own store to see how each turn ended:
``stopped_by_user`` (``interrupted_by_user``), or not (it ran on: the key was lost or spent
elsewhere). Esc -> the server saw the close (p50/p99/max) for those whose request went out;
``never_sent``: stopped before desk sent the request. ``--replay`` points desk at
``../shared/streams/replay.py`` instead (llama.cpp's own server replayed byte for byte, about
1,000 SSE events a second; a lost Esc lets it run its 4.4 s). One desk takes ``--per-desk``
presses (100) before it is restarted.

Run: ``python bench/enter_esc.py --enter-esc-ms 0,2,5,10,20 [--presses 250] [--hog 2]
[--replay] [--per-desk 100]`` (or the same flags to ``bench/esc_latency.py``); prints JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from desk_store import wait_turns  # noqa: E402
from load import start_hogs, stop_hogs  # noqa: E402
from pty_desk import PtyDesk  # noqa: E402
from stats import percentiles  # noqa: E402
from stream_servers import Outcome, ReplayServer  # noqa: E402

PROMPT = b"Tell me everything about streams"


class DemoServer:
    """``python -m demo_model`` in a process of its own."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "demo_model", "--port", "0", "--flush-each-token"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self.proc.stdout is not None
        self.base_url = self.proc.stdout.readline().strip()
        self.root = self.base_url.removesuffix("/v1")
        self._client = httpx.Client(base_url=self.root, timeout=10.0, trust_env=False)

    def configure(self, **knobs: object) -> None:
        """Change knobs (``POST /demo/config``)."""
        self._client.post("/demo/config", json=knobs).raise_for_status()

    def records(self, since: int = 0) -> list[dict[str, Any]]:
        """Chat requests after id ``since``."""
        data = self._client.get("/demo/requests", params={"since": since}).json()
        return [r for r in data["requests"] if "chat" in r["path"]]

    def mark(self) -> int:
        """The id of the last request seen (0: none)."""
        data = self._client.get("/demo/requests").json()
        return max((int(r["id"]) for r in data["requests"]), default=0)

    def outcome(
        self, mark: int, key_at: float, timeout_s: float, grace_s: float = 0.0
    ) -> Outcome | None:
        """How the first chat request after ``mark`` ended: the client closed it, it ran to
        its end, or none came (``never_sent``, or None while it still streams)."""
        del key_at, timeout_s, grace_s  # the turn has ended in desk's store by now
        records = self.records(mark)
        if not records:
            return Outcome("never_sent", None)
        if records[0]["peer_closed_at"] is not None:
            return Outcome("closed", float(records[0]["peer_closed_at"]))
        return Outcome("done", None)

    def stop(self) -> None:
        """Stop the server."""
        self._client.close()
        self.proc.terminate()
        self.proc.wait(10.0)


def wait_until(moment: float) -> None:
    """Sleep until ``time.monotonic()`` reaches ``moment``."""
    while (left := moment - time.monotonic()) > 0:
        time.sleep(min(left, 0.01) if left > 0.002 else 0)


def enter_then_esc(
    server: DemoServer | ReplayServer,
    gaps_ms: list[float],
    presses: int,
    hogs: int,
    per_desk: int = 100,
) -> dict[str, Any]:
    """Prompt and Enter, Esc ``gap`` ms later, ``presses`` times over ``gaps_ms`` in turn.

    Returns:
        per gap and overall: how many turns were stopped and booked to the person, how many
        were not, and Esc -> server close in ms (p50/p99/max) where the request went out.
    """
    if isinstance(server, DemoServer):
        server.configure(
            tokens_per_second=2000.0,
            reply_shape="paragraph",
            max_tokens=3000,  # a lost Esc lets it run 1.5 s
            n_ctx=1_000_000_000,
            flush_each_token=True,
        )
        settings = ["--model", "demo"]
    else:  # the recording repeats: let the history grow past its 8,192 tokens
        settings = ["--context-window", "1000000"]
    procs = start_hogs(hogs)
    results: list[dict[str, Any]] = []
    started = time.monotonic()
    try:
        while len(results) < presses:
            with tempfile.TemporaryDirectory(prefix="desk-enter-esc-") as home:
                db = Path(home) / "desk.db"
                desk = PtyDesk(["--base-url", server.base_url, *settings, "--db", str(db)])
                try:
                    if desk.wait_for(b"idle", 60.0) is None:
                        raise RuntimeError(f"desk did not start: {desk.tail()!r}")
                    time.sleep(0.3)
                    for _ in range(min(per_desk, presses - len(results))):
                        gap = gaps_ms[len(results) % len(gaps_ms)]
                        results.append(_enter_esc_press(server, desk, db, gap))
                        print(json.dumps(results[-1]), file=sys.stderr, flush=True)
                finally:
                    desk.quit()
    finally:
        stop_hogs(procs)

    def figures(picked: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "presses": len(picked),
            "stopped_by_user": sum(r["exit_reason"] == "interrupted_by_user" for r in picked),
            "not_stopped_by_user": sum(r["exit_reason"] != "interrupted_by_user" for r in picked),
            "never_sent": sum(r.get("never_sent", False) for r in picked),
            "esc_to_server_close_ms": percentiles(
                [r["close_ms"] for r in picked if "close_ms" in r]
            ),
        }

    return {
        "hogs": hogs,
        "load_average": os.getloadavg(),
        "seconds": round(time.monotonic() - started, 1),
        **figures(results),
        "by_gap_ms": {str(g): figures([r for r in results if r["gap_ms"] == g]) for g in gaps_ms},
        "not_stopped": [r for r in results if r["exit_reason"] != "interrupted_by_user"][:10],
    }


def _enter_esc_press(
    server: DemoServer | ReplayServer, desk: PtyDesk, db: Path, gap_ms: float
) -> dict[str, Any]:
    """One Enter, Esc ``gap_ms`` later; how the turn ended (desk's store) and the close."""
    before = server.mark()
    done = len(wait_turns(db, 0, 0.0))
    entered = desk.write(PROMPT + b"\r")
    wait_until(entered + gap_ms / 1000.0)
    esc = desk.write(b"\x1b")
    turns = wait_turns(db, done + 1, 30.0)
    result: dict[str, Any] = {"gap_ms": gap_ms, "esc_after_enter_ms": (esc - entered) * 1000}
    result["exit_reason"] = turns[done].exit_reason if len(turns) > done else "never_ended"
    # The turn has ended in desk's store: a request not logged 0.5 s after the key never went
    # (the wait was 2 s a press, 80 % of a run's time)
    outcome = server.outcome(before, esc, 10.0, grace_s=0.5)
    if outcome is None or outcome.kind == "never_sent":
        result["never_sent"] = True
    elif outcome.kind == "closed" and outcome.at is not None:
        result["close_ms"] = round((outcome.at - esc) * 1000, 2)
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--enter-esc-ms", default="0,2,5,10,20", help="gaps, ms: 0,2,5,10,20")
    parser.add_argument("--presses", type=int, default=50)
    parser.add_argument("--hog", type=int, default=2, help="busy processes, pinned")
    parser.add_argument("--replay", action="store_true", help="llama-server's recorded stream")
    parser.add_argument("--per-desk", type=int, default=100, help="presses before a restart")
    args = parser.parse_args(argv)
    gaps = [float(g) for g in str(args.enter_esc_ms).split(",") if g.strip()]
    server = ReplayServer() if args.replay else DemoServer()
    try:
        out = enter_then_esc(server, gaps, args.presses, args.hog, args.per_desk)
    finally:
        server.stop()
    kind = "replay" if args.replay else "demo"
    print(json.dumps({"cpus": os.cpu_count(), "server": kind, **out}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
