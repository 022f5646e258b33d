"""Esc under load: the key byte written to desk's terminal -> the model server saw the close.

The real ``desk`` runs in a pseudo-terminal (:mod:`pty_desk`) against one of three servers
(:mod:`stream_servers`):

- the demo model (default) in a process of its own, streaming as llama-server does (one SSE
  event per token, each written and flushed on its own) at ``--rates`` tokens/s (1,000, 5,000
  and 20,000), as a structured Markdown document or one endless paragraph (``--shapes``);
- ``--replay``: ``../shared/streams/replay.py`` on a free port, llama.cpp's own server replayed
  byte for byte and gap for gap (about 1,000 SSE events a second, one token each);
- ``--base-url URL``: a real server (``llama-server`` computing on the same cores), behind a
  relay in this process that stamps when desk closed its connection. desk sees only the
  relay, so the bench does to the real server what desk does to one in another session (its
  group's nice raised to ``--server-nice``, 10 as desk's default; 0 leaves it alone).

Each press: a prompt and Enter, a random wait (with the demo model a fifth of the presses within
50 ms of Enter, ``--early-share``; otherwise 0.15-1.2 s after Enter, or with the replay and a
real server 0.15-1.2 s after the request reached the server: into the stream), the ESC byte, then
the server's own record of when it saw the connection close (every side stamps
``time.monotonic()``, system-wide on Linux). ``--hog N`` runs N busy processes pinned to the
cores meanwhile (:mod:`load`). ``--gateway child`` runs desk's gateway in a child process of its
own (``--gateway-cmd "desk gateway --stdio ..."``) instead of in desk's. ``--quits N`` adds the
Ctrl+Q figure: a reply streaming for 0.5 s, Ctrl+Q, the time until desk's process is gone.

Per condition: p50/p99/max in ms of ``esc -> server close``; ``over_50ms``, ``over_100ms``;
``missed`` (the reply ran to its end after the Esc: the key did nothing); ``never_sent`` (the
Esc came before desk sent the request, and desk never sent it: nothing to close);
``idle_painted_after_close_ms`` and ``footer_painted_after_close_ms``: the server saw the close
(or the reply's end) -> "idle" and the footer's idle keys painted (looked for in what desk drew
after the Esc, timed when those bytes came from the terminal); ``cpu_after_stop_pct``:
desk's CPU (its threads and a child gateway's) from 200 to 700 ms after the close;
``receipt_closed_ms``: desk's own stop receipt (from the moment its input thread read the key
to the connection closed). Where a press's time went, from desk's stamps (``DESK_STAMPS``,
:mod:`agent.stamps`, on the same clock): ``key_read_ms`` (the byte written -> desk's input thread
had read it and held the interpreter), ``read_to_shut_ms`` (-> the socket shut down) and
``shut_to_seen_ms`` (-> the server, or the relay in front of it, saw the close). Targets: with
``--replay`` p99 <= 25 ms quiet and <= 50 ms with ``--hog 2``, none missed; against a real
llama-server on the same cores p99 <= 50 ms, max <= 100 ms; "idle" and the footer <= 50 ms
after the end; CPU < 2 % from 200 ms after a stop.

A desk is restarted every ``--per-desk`` presses (10; 4 against a real server, whose window is
8,192 tokens; the replay is given a window of 1,000,000) so the session's history stays small.

Run: ``python bench/esc_latency.py [--replay | --base-url URL] [--presses 50] [--hog N]
[--gateway embedded|child] [--quits N] [--rates ...] [--shapes ...] [--seed 1]``; prints JSON.
``--enter-esc-ms 0,2,5,10,20`` measures Esc N ms after Enter instead (:mod:`enter_esc`).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import ctypes.util
import json
import os
import random
import re
import shlex
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from load import start_hogs, stop_hogs  # noqa: E402
from pty_desk import PtyDesk, desk_command  # noqa: E402
from stamps_file import Stamp, read_stamps  # noqa: E402
from stats import percentiles  # noqa: E402
from stream_servers import DemoServer, ReplayServer, StreamServer, WatchedServer  # noqa: E402

from tui_gateway.servers.server_yield import ServerYield  # noqa: E402

PROMPT = b"Tell me everything about streams"
RECEIPT_RE = re.compile(rb"connection closed in ([\d,.]+) ms")
_LIBC = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
CPU_FROM_S, CPU_TO_S = 0.2, 0.7
"""desk's CPU share is measured from 200 to 700 ms after the server saw the close."""
FOOTER_IDLE = b"Send"
"""The footer's Enter key once no turn runs (it says Queue or Steer while one does)."""
EARLY_SHARE = 0.2
"""Share of presses made within 50 ms of Enter."""


def cpu_ns(pid: int) -> int:
    """CPU time (ns) used so far by process ``pid`` (every thread, ended ones too) and by its
    child processes that still run (a gateway in a child), from each one's CPU-time clock
    (``clock_getcpuclockid``)."""
    pids = [pid]
    with contextlib.suppress(OSError):
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        pids += [int(c) for c in children]
    total = 0
    for one in pids:
        clock = ctypes.c_int()
        if _LIBC.clock_getcpuclockid(one, ctypes.byref(clock)) == 0:
            with contextlib.suppress(OSError):
                total += time.clock_gettime_ns(clock.value)
    return total


def wait_until(moment: float) -> None:
    """Sleep until ``time.monotonic()`` reaches ``moment``."""
    while (left := moment - time.monotonic()) > 0:
        time.sleep(min(left, 0.01) if left > 0.002 else 0)


def stages(found: list[Stamp], esc: float, seen: float | None) -> dict[str, float]:
    """``key_read_ms``, ``read_to_shut_ms`` and ``shut_to_seen_ms`` of one press from its
    stamps (each present only when both of its ends are)."""
    out: dict[str, float] = {}
    read = next((float(s.key) for s in found if s.what == "key.stop_read"), None)
    shut = next((s.at for s in found if s.what == "socket.shut"), None)
    if read is not None:
        out["key_read_ms"] = round((read - esc) * 1000, 2)
        if shut is not None:
            out["read_to_shut_ms"] = round((shut - read) * 1000, 2)
    if shut is not None and seen is not None:
        out["shut_to_seen_ms"] = round((seen - shut) * 1000, 2)
    if read is not None:  # the collector holds the interpreter lock: the key may wait for it
        out["gc_before_read_ms"] = round(collecting_s(found, esc, read) * 1000, 2)
    return out


def collecting_s(found: list[Stamp], start: float, end: float) -> float:
    """Seconds desk's garbage collector ran between ``start`` and ``end`` (its stamps)."""
    total, began = 0.0, None
    for s in found:
        if s.what == "gc.start":
            began = s.at
        elif s.what == "gc.stop" and began is not None:
            total += max(0.0, min(s.at, end) - max(began, start))
            began = None
    return total


def one_press(
    server: StreamServer, desk: PtyDesk, delay_s: float, early: bool, stamps: Path
) -> dict[str, Any] | None:
    """Prompt, Enter, wait ``delay_s``, Esc; the figures of that press (None: desk stuck);
    ``stamps`` is the file desk's ``DESK_STAMPS`` names."""
    before = server.mark()
    mark = desk.mark
    entered = desk.write(PROMPT + b"\r")
    # with a server that says when the request came, late presses count from there (Esc
    # while the reply streams); early ones, and the demo model's, from Enter
    started = None if early else server.started(before, 10.0)
    wait_until((started or entered) + delay_s)
    stop_mark = desk.mark  # "idle" and the idle keys are looked for after the key only
    _, stamps_at = read_stamps(stamps, 0)
    esc = desk.write(b"\x1b")

    result: dict[str, Any] = {"early": early, "after_enter_ms": round((esc - entered) * 1000, 1)}
    outcome = server.outcome(before, esc, 20.0)
    if outcome is None:
        return None
    if outcome.kind == "never_sent":
        result["never_sent"] = True
    else:
        assert outcome.at is not None
        result["close_ms"] = round((outcome.at - esc) * 1000, 2)
        result["missed"] = outcome.kind == "done"
    result.update(stages(read_stamps(stamps, stamps_at)[0], esc, outcome.at))
    if outcome.kind == "closed" and outcome.at is not None:  # desk's CPU once it stopped
        wait_until(outcome.at + CPU_FROM_S)
        before_ns = cpu_ns(desk.proc.pid)
        wait_until(outcome.at + CPU_TO_S)
        used = cpu_ns(desk.proc.pid) - before_ns
        result["cpu_after_stop_pct"] = round(used / ((CPU_TO_S - CPU_FROM_S) * 1e9) * 100, 2)
    idle = desk.wait_for(b"idle", 60.0, start=stop_mark)
    if idle is None:
        return None
    send = desk.wait_for(FOOTER_IDLE, 5.0, start=stop_mark)
    if outcome.at is not None:  # the screen after the turn's end (the server saw it end)
        result["idle_painted_ms"] = round((idle - outcome.at) * 1000, 2)
        if send is not None:
            result["footer_painted_ms"] = round((send - outcome.at) * 1000, 2)
    receipts = RECEIPT_RE.findall(desk.since(mark))
    if receipts:  # desk's own figure (the last painted): the key read -> the socket closed
        result["receipt_closed_ms"] = float(receipts[-1].replace(b",", b""))
    time.sleep(0.1)  # let the last paint go out
    return result


def desk_args(server: StreamServer, model: str, gateway: str) -> list[str]:
    """desk's arguments against ``server``: the embedded gateway, or (``gateway`` is ``child``)
    one in a child process speaking stdio."""
    settings = ["--base-url", server.base_url, *(["--model", model] if model else [])]
    if isinstance(server, ReplayServer):  # the recording repeats: let history grow past 8,192
        settings += ["--context-window", "1000000"]
    if gateway == "child":
        return ["--gateway-cmd", shlex.join([*desk_command(), "gateway", "--stdio", *settings])]
    return settings


def start_desk(server: StreamServer, opts: Options, stamps: Path | None = None) -> PtyDesk:
    """A desk against ``server``, on screen and past its first check of the server (stamping
    to ``stamps`` when given)."""
    env = {"DESK_STAMPS": str(stamps)} if stamps is not None else {}
    if isinstance(server, WatchedServer):  # desk's server is the relay, in this process's
        env["DESK_SERVER_NICE"] = "0"  # session: the real one yields as desk would (main)
    desk = PtyDesk(desk_args(server, opts.model, opts.gateway), env=env)
    if desk.wait_for(b"idle", 30.0) is None or desk.wait_for(b"window", 30.0) is None:
        desk.quit()
        raise RuntimeError(f"desk did not start: {desk.tail()!r}")
    time.sleep(0.3)
    return desk


def run_condition(server: StreamServer, rate: float, shape: str, opts: Options) -> dict[str, Any]:
    """``opts.presses`` presses at ``rate`` tokens/s with replies of ``shape``."""
    server.configure(rate, shape)
    rng = random.Random(opts.seed)
    results: list[dict[str, Any]] = []
    stuck = 0
    while len(results) + stuck < opts.presses:
        stamps = Path(tempfile.mkdtemp(prefix="desk-stamps-")) / "stamps.txt"
        desk = start_desk(server, opts, stamps)
        try:
            for _ in range(min(opts.per_desk, opts.presses - len(results) - stuck)):
                early = rng.random() < opts.early_share
                delay = rng.uniform(0.0, 0.05) if early else rng.uniform(0.15, 1.2)
                result = one_press(server, desk, delay, early, stamps)
                if result is None:
                    stuck += 1
                    break
                results.append(result)
                if opts.detail:
                    print(json.dumps(result), file=sys.stderr, flush=True)
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
        "idle_painted_after_close_ms": percentiles(
            [r["idle_painted_ms"] for r in results if "idle_painted_ms" in r]
        ),
        "footer_painted_after_close_ms": percentiles(
            [r["footer_painted_ms"] for r in results if "footer_painted_ms" in r]
        ),
        **{
            name: percentiles([r[name] for r in results if name in r])
            for name in ("key_read_ms", "read_to_shut_ms", "shut_to_seen_ms", "gc_before_read_ms")
        },
        "cpu_after_stop_pct": percentiles(
            [r["cpu_after_stop_pct"] for r in results if "cpu_after_stop_pct" in r]
        ),
        "over_50ms": sum(1 for c in closes if c > 50.0),
        "over_100ms": sum(1 for c in closes if c > 100.0),
        "missed": sum(1 for r in results if r.get("missed")),
        "never_sent": sum(1 for r in results if r.get("never_sent")),
        "desk_stuck": stuck,
        "worst": sorted(results, key=lambda r: -float(r.get("close_ms", 0)))[:3],
    }


def quit_figures(server: StreamServer, opts: Options) -> dict[str, Any]:
    """Ctrl+Q while a reply streams, ``opts.quits`` times: the key -> desk's process gone (ms),
    and what the status bar said meanwhile."""
    times: list[float] = []
    said = 0
    for _ in range(opts.quits):
        desk = start_desk(server, opts)
        try:
            entered = desk.write(PROMPT + b"\r")
            wait_until(entered + 0.5)
            mark = desk.mark
            pressed = desk.write(b"\x11")
            desk.proc.wait(30.0)
            times.append((time.monotonic() - pressed) * 1000)
            painted = desk.since(mark)
            said += b"stopping" in painted or b"quitting" in painted
        finally:
            desk.quit()
    return {"ctrl_q_to_exit_ms": percentiles(times), "status_said_quitting": said}


@dataclass(frozen=True, slots=True)
class Options:
    """What one run measures (see ``--help``)."""

    presses: int
    per_desk: int
    early_share: float
    seed: int
    model: str
    gateway: str
    quits: int
    detail: bool = False


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--replay", action="store_true", help="llama-server's recorded stream")
    where.add_argument("--base-url", help="a real server, e.g. http://127.0.0.1:8080/v1")
    parser.add_argument("--presses", type=int, default=50)
    parser.add_argument("--rates", type=float, nargs="+", default=[1000.0, 5000.0, 20000.0])
    parser.add_argument("--shapes", nargs="+", default=["document", "paragraph"])
    parser.add_argument("--hog", type=int, default=0, help="busy processes, pinned to cores")
    parser.add_argument("--gateway", choices=["embedded", "child"], default="embedded")
    parser.add_argument("--per-desk", type=int, default=0, help="presses before a restart")
    parser.add_argument("--early-share", type=float, default=None)
    parser.add_argument("--quits", type=int, default=0, help="Ctrl+Q figures to take")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--detail", action="store_true", help="each press on stderr")
    parser.add_argument("--enter-esc-ms", default="", help="Esc N ms after Enter: 0,2,5,10,20")
    parser.add_argument(
        "--server-nice", type=int, default=10, help="the real server's group nice (desk's 10)"
    )
    args = parser.parse_args(argv)
    if args.enter_esc_ms:
        import enter_esc

        return enter_esc.main(
            ["--enter-esc-ms", args.enter_esc_ms, "--presses", str(args.presses)]
            + ["--hog", str(args.hog)]
            + (["--replay"] if args.replay else [])
            + (["--per-desk", str(args.per_desk)] if args.per_desk else [])
        )
    server: StreamServer
    if args.replay:
        server, model, conditions = ReplayServer(), "", [(1000.0, "recording")]
    elif args.base_url:
        server, model, conditions = WatchedServer(args.base_url), "", [(0.0, "server")]
    else:
        server, model = DemoServer(), "demo"
        conditions = [(rate, shape) for rate in args.rates for shape in args.shapes]
    demo = isinstance(server, DemoServer)
    opts = Options(
        presses=args.presses,
        # a recorded or real server has a window of 8,192 tokens: restart before it fills
        per_desk=args.per_desk or (4 if isinstance(server, WatchedServer) else 10),
        early_share=(EARLY_SHARE if demo else 0.0)
        if args.early_share is None
        else args.early_share,
        seed=args.seed,
        model=model,
        gateway=args.gateway,
        quits=args.quits,
        detail=args.detail,
    )
    out: dict[str, Any] = {
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
        "server": type(server).__name__,
        "hog": args.hog,
        "gateway": args.gateway,
        "load_before": os.getloadavg()[0],
        "conditions": [],
    }
    hogs = start_hogs(args.hog)
    # What desk does to a local server in another session (see tui_gateway.servers.server_yield),
    # done here to the real server behind the relay: desk only sees the relay.
    yielding = ServerYield(args.server_nice)
    if args.base_url:
        out["server_yielded_pid"] = yielding.follow(args.base_url)
    try:
        for rate, shape in conditions:
            seed = args.seed * 1000 + int(rate) + len(shape)
            figures = run_condition(server, rate, shape, replace(opts, seed=seed))
            out["conditions"].append(figures)
            print(json.dumps(figures), file=sys.stderr, flush=True)
        if opts.quits:
            out["quit"] = quit_figures(server, opts)
    finally:
        yielding.restore()
        stop_hogs(hogs)
        server.stop()
    out["load_after"] = os.getloadavg()[0]
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
