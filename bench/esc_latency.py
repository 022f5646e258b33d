"""Esc under load: the key byte written to desk's terminal -> the model server saw the close.

The real ``desk`` runs in a pseudo-terminal (:mod:`pty_desk`) against the demo model in a
process of its own (``python -m demo_model``), which streams as llama-server does (one SSE
event per token, each written and flushed on its own) at 1,000, 5,000 and 20,000 tokens/s, as
a structured Markdown document or as one endless paragraph. For each condition the bench types
a prompt and Enter, waits a random moment (a fifth of the presses within 50 ms of Enter, the
rest 0.15-1.2 s into the stream), writes the ESC byte, and reads the server's own record of
when it noticed the closed connection (both sides stamp ``time.monotonic()``, system-wide on
Linux). With ``--hog`` every condition runs again with a busy loop on each core (another
process, as a build or a browser would be).

Per condition: p50/p99/max in ms of ``esc -> server close``; ``over_100ms``; ``missed`` (the
reply ended by itself after the Esc: the key did nothing); ``never_sent`` (the Esc came before
desk sent the request, and desk never sent it: nothing to close); ``receipt_closed_ms``,
desk's own stop receipt (from the moment its input thread read the key to the socket closed:
the rest of the figure is the terminal waking desk up and the server noticing). Targets:
p99 <= 25 ms without the hog, <= 50 ms with it, no press over 100 ms.

A desk is restarted every ``--per-desk`` presses so the session's history (each stopped reply
is kept and sent again) stays small.

Run: ``python bench/esc_latency.py [--presses 50] [--rates 1000 5000 20000]
[--shapes document paragraph] [--hog both|off|on] [--seed 1]``; prints JSON.

``--enter-esc-ms 0,2,5,10,20`` measures something else (:func:`enter_then_esc`): Esc written
N ms after the Enter (each gap in turn, ``--presses`` presses in all), with the ``--hog`` busy
processes pinned to the cores (:mod:`load`); desk's own store (``--db``) says how each turn
ended: ``stopped_by_user`` (``interrupted_by_user``), or not (it ran on: the key was lost or
spent elsewhere). Esc -> the server saw the close (p50/p99/max) for those whose request went
out; ``never_sent``: stopped before desk sent the request.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from desk_store import wait_turns  # noqa: E402
from load import start_hogs, stop_hogs  # noqa: E402
from pty_desk import PtyDesk  # noqa: E402
from stats import percentiles  # noqa: E402

PROMPT = b"Tell me everything about streams"
RECEIPT_RE = re.compile(rb"connection closed in ([\d,.]+) ms")
EARLY_SHARE = 0.2
"""Share of presses made within 50 ms of Enter."""


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

    def last_id(self) -> int:
        """The id of the last request seen (0: none)."""
        data = self._client.get("/demo/requests").json()
        return max((int(r["id"]) for r in data["requests"]), default=0)

    def stop(self) -> None:
        """Stop the server."""
        self._client.close()
        self.proc.terminate()
        self.proc.wait(10.0)


@contextmanager
def cpu_hog(cores: int) -> Iterator[None]:
    """A busy loop on each of ``cores`` cores, in processes of their own."""
    hogs = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(cores)]
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


def wait_until(moment: float) -> None:
    """Sleep until ``time.monotonic()`` reaches ``moment``."""
    while (left := moment - time.monotonic()) > 0:
        time.sleep(min(left, 0.01) if left > 0.002 else 0)


def one_press(
    server: DemoServer, desk: PtyDesk, delay_s: float, early: bool
) -> dict[str, Any] | None:
    """Prompt, Enter, wait ``delay_s``, Esc; the figures of that press (None: desk stuck)."""
    before = server.last_id()
    mark = desk.mark
    entered = desk.write(PROMPT + b"\r")
    wait_until(entered + delay_s)
    esc = desk.write(b"\x1b")

    result: dict[str, Any] = {"early": early, "after_enter_ms": round((esc - entered) * 1000, 1)}
    deadline = time.monotonic() + 20.0
    while time.monotonic() < deadline:
        records = server.records(before)
        done = [r for r in records if r["outcome"] != "running"]
        if done:
            record = done[0]
            if record["peer_closed_at"] is not None:
                result["close_ms"] = round((record["peer_closed_at"] - esc) * 1000, 2)
            else:
                result["missed"] = True
                result["close_ms"] = round((record["completed_at"] - esc) * 1000, 2)
            break
        if not records and time.monotonic() - esc > 2.0:
            result["never_sent"] = True
            break
        time.sleep(0.01)
    else:
        return None
    idle = desk.wait_for(b"idle", 60.0, start=mark)
    if idle is None:
        return None
    receipt = RECEIPT_RE.search(desk.since(mark))
    if receipt is not None:  # desk's own figure: the key read -> the socket closed
        result["receipt_closed_ms"] = float(receipt.group(1).replace(b",", b""))
    time.sleep(0.1)  # let the last paint go out
    return result


def run_condition(
    server: DemoServer, rate: float, shape: str, presses: int, per_desk: int, seed: int
) -> dict[str, Any]:
    """``presses`` presses at ``rate`` tokens/s with replies of ``shape``."""
    server.configure(
        tokens_per_second=rate,
        reply_shape=shape,
        max_tokens=int(rate * 4) + 2000,  # longer than any press waits
        n_ctx=1_000_000_000,
        flush_each_token=True,
    )
    rng = random.Random(seed)
    results: list[dict[str, Any]] = []
    stuck = 0
    while len(results) + stuck < presses:
        desk = PtyDesk(["--base-url", server.base_url, "--model", "demo"])
        try:
            if desk.wait_for(b"idle", 30.0) is None:
                raise RuntimeError(f"desk did not start: {desk.tail()!r}")
            time.sleep(0.3)
            for _ in range(min(per_desk, presses - len(results) - stuck)):
                early = rng.random() < EARLY_SHARE
                delay = rng.uniform(0.0, 0.05) if early else rng.uniform(0.15, 1.2)
                result = one_press(server, desk, delay, early)
                if result is None:
                    stuck += 1
                    break
                results.append(result)
        finally:
            desk.quit()
    closes = [r["close_ms"] for r in results if "close_ms" in r and not r.get("missed")]
    return {
        "rate_tokens_per_s": rate,
        "shape": shape,
        "presses": len(results),
        "esc_to_server_close_ms": percentiles(closes),
        "early_presses": sum(r["early"] for r in results),
        "early_esc_to_close_ms": percentiles(
            [r["close_ms"] for r in results if r["early"] and "close_ms" in r]
        ),
        "receipt_closed_ms": percentiles(
            [r["receipt_closed_ms"] for r in results if "receipt_closed_ms" in r]
        ),
        "over_100ms": sum(1 for c in closes if c > 100.0),
        "missed": sum(1 for r in results if r.get("missed")),
        "never_sent": sum(1 for r in results if r.get("never_sent")),
        "desk_stuck": stuck,
        "worst": sorted(results, key=lambda r: -float(r.get("close_ms", 0)))[:3],
    }


def enter_then_esc(
    server: DemoServer, gaps_ms: list[float], presses: int, hogs: int, per_desk: int = 100
) -> dict[str, Any]:
    """Prompt and Enter, Esc ``gap`` ms later, ``presses`` times over ``gaps_ms`` in turn.

    Returns:
        per gap and overall: how many turns were stopped and booked to the person, how many
        were not, and Esc -> server close in ms (p50/p99/max) where the request went out.
    """
    server.configure(
        tokens_per_second=2000.0,
        reply_shape="paragraph",
        max_tokens=3000,  # a lost Esc lets it run 1.5 s
        n_ctx=1_000_000_000,
        flush_each_token=True,
    )
    procs = start_hogs(hogs)
    results: list[dict[str, Any]] = []
    started = time.monotonic()
    try:
        while len(results) < presses:
            with tempfile.TemporaryDirectory(prefix="desk-enter-esc-") as home:
                db = Path(home) / "desk.db"
                desk = PtyDesk(["--base-url", server.base_url, "--model", "demo", "--db", str(db)])
                try:
                    if desk.wait_for(b"idle", 60.0) is None:
                        raise RuntimeError(f"desk did not start: {desk.tail()!r}")
                    time.sleep(0.3)
                    for _ in range(min(per_desk, presses - len(results))):
                        gap = gaps_ms[len(results) % len(gaps_ms)]
                        results.append(_enter_esc_press(server, desk, db, gap))
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


def _enter_esc_press(server: DemoServer, desk: PtyDesk, db: Path, gap_ms: float) -> dict[str, Any]:
    """One Enter, Esc ``gap_ms`` later; how the turn ended (desk's store) and the close."""
    before = server.last_id()
    done = len(wait_turns(db, 0, 0.0))
    entered = desk.write(PROMPT + b"\r")
    wait_until(entered + gap_ms / 1000.0)
    esc = desk.write(b"\x1b")
    turns = wait_turns(db, done + 1, 30.0)
    result: dict[str, Any] = {"gap_ms": gap_ms, "esc_after_enter_ms": (esc - entered) * 1000}
    result["exit_reason"] = turns[done].exit_reason if len(turns) > done else "never_ended"
    records = server.records(before)
    if not records:
        result["never_sent"] = True
    elif records[0]["peer_closed_at"] is not None:
        result["close_ms"] = round((records[0]["peer_closed_at"] - esc) * 1000, 2)
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--presses", type=int, default=50)
    parser.add_argument("--rates", type=float, nargs="+", default=[1000.0, 5000.0, 20000.0])
    parser.add_argument("--shapes", nargs="+", default=["document", "paragraph"])
    parser.add_argument("--hog", choices=["both", "off", "on"], default="both")
    parser.add_argument("--per-desk", type=int, default=10, help="presses before a restart")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--enter-esc-ms", default="", help="Esc N ms after Enter: 0,2,5,10,20")
    args = parser.parse_args(argv)
    if args.enter_esc_ms:
        return _enter_esc_main(args)
    server = DemoServer()
    out: dict[str, Any] = {"cpus": os.cpu_count(), "python": sys.version.split()[0]}
    hogs = {"both": [False, True], "off": [False], "on": [True]}[args.hog]
    try:
        for hog in hogs:
            key = "with_cpu_hog" if hog else "without_cpu_hog"
            out[key] = []
            for rate in args.rates:
                for shape in args.shapes:
                    seed = args.seed * 1000 + int(rate) + len(shape)
                    if hog:
                        with cpu_hog(os.cpu_count() or 2):
                            figures = run_condition(
                                server, rate, shape, args.presses, args.per_desk, seed
                            )
                    else:
                        figures = run_condition(
                            server, rate, shape, args.presses, args.per_desk, seed
                        )
                    out[key].append(figures)
                    print(json.dumps(figures), file=sys.stderr, flush=True)
    finally:
        server.stop()
    print(json.dumps(out, indent=2))
    return 0


def _enter_esc_main(args: argparse.Namespace) -> int:
    """``--enter-esc-ms``: :func:`enter_then_esc` with ``--presses`` and ``--hog`` (a count, or
    ``on``/``both`` for one busy process per core, ``off`` for none)."""
    hog = args.hog
    hogs = hog if isinstance(hog, int) else (0 if hog == "off" else os.cpu_count() or 2)
    gaps = [float(g) for g in str(args.enter_esc_ms).split(",") if g.strip()]
    server = DemoServer()
    try:
        out = enter_then_esc(server, gaps, args.presses, hogs)
    finally:
        server.stop()
    print(json.dumps({"cpus": os.cpu_count(), **out}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
