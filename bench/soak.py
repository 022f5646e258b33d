"""A soak: desk's gateway for a long stretch, stopped at random, its database locked at random.

Two gateways share one SQLite file, as two desks on one machine do:

* the *stream* gateway talks to ``replay.py`` (llama.cpp's own server, recorded: ~1,000 one-token
  SSE events a second for 4.4 s) and its turns are stopped by the person (Esc) at a random moment
  of the stream, by the system (``session.evicted``) at a random moment, or left to complete;
* the *tools* gateway talks to the demo model and runs ``shell`` calls stopped at a random
  moment of the command, ``/compress`` stopped at a random moment of the summary, and short
  turns that complete.

Meanwhile another connection takes the database's write lock (``BEGIN EXCLUSIVE``) for 0.1-2 s
at random moments: writes wait, nothing may be lost. With ``--hog N``, N busy processes take the
cores (``bench/load.py``).

At the end (both gateways shut down) it checks, and counts as ``breaks``:

* every turn got exactly one ``message.complete``, booked to the right party (a stop by the
  person ``interrupted_by_user``; by the system ``interrupted_by_system(session.evicted)``; a
  stop that came after the end leaves ``completed``; one still running when the soak ends is
  the quit's, ``interrupted_by_system(gateway.shutdown)``); no ``failed(...)``;
* the database has each turn once, closed, with the outcome the client saw; no turn left
  ``running``;
* no thread of the gateways, no child process left;
* RSS: sampled every 2 s (one step in five opens a new session: the gateway keeps 8 live and
  evicts the oldest, so what grows is not the sessions' transcripts). ``rss`` reports its
  growth two ways, both printed: from the start (the last fifth's peak over the first sample)
  and after the warm-up (the last fifth's peak over the first fifth's peak; the warm-up is
  SQLite's page caches, malloc's arenas, the live sessions filling; on a 60-minute run the
  first 12 minutes), with the peak of each tenth of the run (does it level off?). The growth
  after the warm-up must stay within ``--rss-growth-pct``. ``memory_by_minute`` splits each
  minute's RSS (``bench/memory.py``): anonymous and file-backed, Python's allocated blocks,
  what glibc's malloc hands out and keeps free, its arenas, SQLite's own allocations, threads.
  The demo model runs in a process of its own, so its record of every request is not counted.
  malloc's arenas are capped as desk caps them at its start (:mod:`desk.malloc_tuning`);
  ``--arena-max 0`` measures glibc's default.

Prints one JSON object (figures and breaks); exits 1 when there was any break. Usage::

    .venv/bin/python bench/soak.py [--minutes 5] [--hog 2] [--seed 1] [--rss-growth-pct 10]
        [--census] [--tracemalloc] [--arena-max N] [--trim]

``--census`` names the object types whose count grew after the warm-up; ``--arena-max N``
limits glibc to N malloc arenas (default: desk's cap; 0: glibc's default), ``--trim`` calls
``malloc_trim(0)`` after each step (to measure whether free heap memory kept by glibc is what
grows).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import sys
import tempfile
import threading
import time
import tracemalloc
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from load import start_hogs, stop_hogs  # noqa: E402
from memory import (  # noqa: E402
    MemorySample,
    arena_max,
    by_minute,
    census,
    rss_growth,
    set_arena_max,
    trim,
)
from soak_processes import DemoProcess, descendants  # noqa: E402
from stats import percentiles  # noqa: E402
from stream_servers import ReplayServer  # noqa: E402

from agent.provider.client import ProviderConfig  # noqa: E402
from agent.stops import StopRequest, Surface  # noqa: E402
from agent.store import open_store  # noqa: E402
from contract.events import (  # noqa: E402
    CompressionComplete,
    CompressionProgressed,
    GatewayEvent,
    MessageComplete,
    MessageDelta,
    ToolOutput,
)
from desk.malloc_tuning import ARENA_MAX  # noqa: E402
from tui_gateway.gateway import Gateway, GatewayConfig  # noqa: E402

TOOL_PROMPT = 'call tool shell with {"command": "echo started; sleep 30"}'
WAIT_S = 60.0

LOCKED = threading.Event()
"""Set while the soak holds the database's write lock."""


@dataclass(frozen=True, slots=True)
class Seen:
    """A ``message.complete`` as the checks need it (not its text: the soak's memory is
    measured)."""

    exit_reason: str
    closed_ms: float | None


class Watch:
    """What the soak needs of a gateway's events, in bounded memory (no deltas kept)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self.completes: dict[str, list[Seen]] = {}
        self.compressions: dict[str, list[CompressionComplete]] = {}
        self._streaming: set[str] = set()
        self._tooling: set[str] = set()
        self._summarizing: set[str] = set()
        self._compress_turns: set[str] = set()

    def __call__(self, event: GatewayEvent) -> None:
        p = event.payload
        with self._cond:
            if isinstance(p, MessageComplete):
                closed = p.stop.closed_ms if p.stop is not None else None
                self.completes.setdefault(p.turn_id, []).append(Seen(p.exit_reason, closed))
            elif isinstance(p, CompressionComplete):
                self.compressions.setdefault(p.turn_id, []).append(p)
            elif isinstance(p, MessageDelta):
                if p.turn_id in self._streaming:
                    return
                self._streaming.add(p.turn_id)
            elif isinstance(p, ToolOutput):
                self._tooling.add(p.turn_id)
            elif isinstance(p, CompressionProgressed) and p.tokens_out > 0:
                self._summarizing.add(p.turn_id)
            else:
                return
            self._cond.notify_all()

    def wait(self, turn_id: str, what: str, timeout: float = WAIT_S) -> bool:
        """Wait for ``what`` (``streaming``, ``tooling``, ``summarizing``, ``done``) of a turn,
        or its end; True when ``what`` came."""
        seen = {
            "streaming": self._streaming,
            "tooling": self._tooling,
            "summarizing": self._summarizing,
            "done": set(),
        }[what]
        with self._cond:
            self._cond.wait_for(lambda: turn_id in seen or self.ended(turn_id), timeout)
            return turn_id in seen

    def ended(self, turn_id: str) -> bool:
        """Whether the turn ended: its ``message.complete``, or for a ``/compress``
        (:meth:`compressing`) its ``compression.complete``. A prompt's turn that compresses the
        session before its request sends a ``compression.complete`` of its own id too; that one
        does not end it."""
        return turn_id in self.completes or (
            turn_id in self._compress_turns and turn_id in self.compressions
        )

    def compressing(self, turn_id: str) -> None:
        """Say the turn is a ``/compress``: its ``compression.complete`` ends it."""
        with self._cond:
            self._compress_turns.add(turn_id)
            self._cond.notify_all()

    def forget(self, turn_id: str) -> None:
        """Drop the per-turn flags (the completes are kept for the checks)."""
        with self._cond:
            for s in (self._streaming, self._tooling, self._summarizing):
                s.discard(turn_id)


@dataclass
class Expect:
    """What one turn should have been booked as."""

    turn_id: str
    op: str
    stop: str | None = None  # "user", "system" or None


@dataclass
class Side:
    """One gateway and what the soak did with it."""

    name: str
    gateway: Gateway
    watch: Watch
    expects: list[Expect] = field(default_factory=list)
    ops: Counter[str] = field(default_factory=Counter)
    sessions: list[str] = field(default_factory=list)
    stopped_locked: dict[str, bool] = field(default_factory=dict)
    running_at_end: set[str] = field(default_factory=set)


def pick_session(side: Side, rng: random.Random) -> str:
    """One of the side's recent sessions, or (one time in five) a new one: the gateway keeps
    at most ``max_sessions`` live and evicts the oldest, so memory reaches a steady state."""
    if rng.random() < 0.2:
        side.sessions = [*side.sessions[-3:], side.gateway.session_create("soak")]
    return rng.choice(side.sessions)


def stop(side: Side, session: str, turn_id: str, issuer: str) -> None:
    side.stopped_locked[turn_id] = LOCKED.is_set()
    if issuer == "user":
        request = StopRequest.by_user(Surface.DESK_KEY)
    else:
        request = StopRequest.by_system(Surface.SESSION_EVICTED, "soak: a system stop")
    side.gateway.session_interrupt(session, request, turn_id=turn_id)


def stream_step(side: Side, rng: random.Random, pause: threading.Event) -> None:
    """A turn of the recorded stream: stopped by the person or the system, or let finish."""
    session = pick_session(side, rng)
    turn_id = side.gateway.prompt_submit(session, f"tell me a story {rng.random()}").turn_id
    roll = rng.random()
    op = "stream_user_stop" if roll < 0.6 else "stream_system_stop" if roll < 0.8 else "stream"
    expect = Expect(turn_id, op)
    side.expects.append(expect)
    side.ops[op] += 1
    if op != "stream":
        if rng.random() < 0.2:
            pause.wait(rng.uniform(0.0, 0.05))  # maybe before the first token
        else:
            side.watch.wait(turn_id, "streaming")
            pause.wait(rng.uniform(0.0, 5.0))  # the stream lasts about 4.4 s
        expect.stop = "user" if op == "stream_user_stop" else "system"
        stop(side, session, turn_id, expect.stop)
    side.watch.wait(turn_id, "done")
    side.watch.forget(turn_id)


def tools_step(side: Side, rng: random.Random, pause: threading.Event) -> None:
    """A shell call stopped mid-command, a compression stopped mid-summary, or a short turn."""
    session = pick_session(side, rng)
    roll = rng.random()
    if roll < 0.4:
        turn_id = side.gateway.prompt_submit(session, TOOL_PROMPT).turn_id
        expect = Expect(turn_id, "tool_stop", "user")
        side.expects.append(expect)
        side.watch.wait(turn_id, "tooling")
        pause.wait(rng.uniform(0.0, 0.5))
    elif roll < 0.7:
        turn_id = side.gateway.session_compress(session).turn_id
        side.watch.compressing(turn_id)
        expect = Expect(turn_id, "compress_stop", "user")
        side.expects.append(expect)
        side.watch.wait(turn_id, "summarizing")
        pause.wait(rng.uniform(0.0, 0.3))
    else:
        text = f"reply with exactly: fine {rng.randrange(10**6)} " + "words " * rng.randrange(200)
        turn_id = side.gateway.prompt_submit(session, text).turn_id
        expect = Expect(turn_id, "short")
        side.expects.append(expect)
    side.ops[expect.op] += 1
    if expect.stop is not None:
        stop(side, session, turn_id, expect.stop)
    side.watch.wait(turn_id, "done")
    side.watch.forget(turn_id)


def lock_database(db: Path, rng: random.Random, until: float, done: threading.Event) -> list[float]:
    """Take the write lock for 0.1-2 s at random moments; the hold times, in seconds."""
    held: list[float] = []
    while not done.wait(rng.uniform(1.0, 6.0)) and time.monotonic() < until:
        conn = sqlite3.connect(db, timeout=30.0, isolation_level=None)
        try:
            conn.execute("BEGIN EXCLUSIVE")
            hold = rng.uniform(0.1, 2.0)
            LOCKED.set()
            done.wait(hold)
            LOCKED.clear()
            conn.execute("COMMIT")
            held.append(hold)
        except sqlite3.Error:
            pass
        finally:
            conn.close()
    return held


def compression_breaks(
    watch: Watch, expect: Expect, outcomes: Counter[str], at_end: bool
) -> list[str]:
    """A ``/compress`` stopped by the person: one ``compression.complete``, and a cancel
    booked to the person."""
    got = watch.compressions.get(expect.turn_id, [])
    if len(got) != 1:
        return [f"compress_stop {expect.turn_id}: {len(got)} compression.complete"]
    done = got[0]
    outcomes[f"compress_stop: {done.status}"] += 1
    if done.status == "failed":
        return [f"compress_stop {expect.turn_id}: failed: {done.message}"]
    issuers = {"user", "system"} if at_end else {"user"}
    if done.status == "cancelled" and (done.stop is None or done.stop.issuer not in issuers):
        issuer = None if done.stop is None else done.stop.issuer
        return [f"compress_stop {expect.turn_id}: cancelled by {issuer}, stopped by the user"]
    return []


def bookkeeping_kb(sides: list[Side]) -> int:
    """What the soak itself keeps of every turn for the checks (in this process, so counted in
    its RSS), KiB: a rough ``sys.getsizeof`` sum of the records, their keys and containers."""
    size = 0
    for side in sides:
        w = side.watch
        for d in (w.completes, w.compressions, side.stopped_locked):
            size += sys.getsizeof(d) + sum(sys.getsizeof(k) for k in d)
        size += sum(sys.getsizeof(v) + 56 * len(v) for v in w.completes.values())
        size += sum(sys.getsizeof(v) + 120 * len(v) for v in w.compressions.values())
        size += sys.getsizeof(side.expects) + sum(
            sys.getsizeof(e) + sys.getsizeof(e.__dict__) for e in side.expects
        )
    return size // 1024


def outcome_breaks(sides: list[Side], db: Path) -> tuple[list[str], Counter[str]]:
    """The breaks of the booking invariants, and the outcomes seen."""
    breaks: list[str] = []
    outcomes: Counter[str] = Counter()
    store = open_store(db)
    try:
        for side in sides:
            for expect in side.expects:
                if expect.op == "compress_stop":
                    at_end = expect.turn_id in side.running_at_end
                    breaks += compression_breaks(side.watch, expect, outcomes, at_end)
                    continue
                got = side.watch.completes.get(expect.turn_id, [])
                if len(got) != 1:
                    breaks.append(f"{expect.op} {expect.turn_id}: {len(got)} message.complete")
                    continue
                reason = got[0].exit_reason
                outcomes[f"{expect.op}: {reason}"] += 1
                allowed = {"completed"}
                if expect.turn_id in side.running_at_end:
                    allowed.add("interrupted_by_system(gateway.shutdown)")
                if expect.stop == "user":
                    allowed.add("interrupted_by_user")
                elif expect.stop == "system":
                    allowed.add("interrupted_by_system(session.evicted)")
                if reason not in allowed:
                    breaks.append(f"{expect.op} {expect.turn_id}: booked {reason}")
                row = store.turns.get_turn(expect.turn_id)
                if row is None or row.exit_reason != reason:
                    saved = None if row is None else row.exit_reason
                    breaks.append(f"{expect.op} {expect.turn_id}: saved {saved}, seen {reason}")
        left = store.turns.open_turns()
        breaks += [f"turn {t.id} left {t.status} in the database" for t in left]
    finally:
        store.close()
    return breaks, outcomes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--hog", type=int, default=0, help="busy processes on the cores")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rss-growth-pct", type=float, default=10.0)
    parser.add_argument(
        "--tracemalloc", action="store_true", help="name the 10 places whose memory grew most"
    )
    parser.add_argument(
        "--arena-max",
        type=int,
        default=ARENA_MAX,
        help="mallopt(M_ARENA_MAX), as desk sets it at its start (0: glibc's default)",
    )
    parser.add_argument("--trim", action="store_true", help="malloc_trim(0) after each step")
    parser.add_argument("--census", action="store_true", help="live objects by type, grown")
    args = parser.parse_args(argv)
    capped = args.arena_max if args.arena_max and set_arena_max(args.arena_max) else 0
    if args.tracemalloc:
        tracemalloc.start(8)
    rng = random.Random(args.seed)
    tmp = Path(tempfile.mkdtemp(prefix="desk-soak-"))
    db = tmp / "desk.db"
    baseline_threads = {t.ident for t in threading.enumerate()}
    replay = ReplayServer()
    demo = DemoProcess(tokens_per_second=300.0)
    outside = {replay.proc.pid, demo.proc.pid}
    hogs = start_hogs(args.hog)
    outside |= {h.pid for h in hogs}
    sides: list[Side] = []
    for name, provider, config in (
        ("stream", ProviderConfig(base_url=replay.base_url, model="replay"), {"tools": False}),
        (
            "tools",
            ProviderConfig(base_url=demo.base_url, model=demo.model),
            {"approvals": False, "cwd": tmp, "context_window": 4000, "compress_threshold": 0.9},
        ),
    ):
        watch = Watch()
        gateway = Gateway(GatewayConfig(provider=provider, **config), store=open_store(db))
        gateway.subscribe(watch)
        side = Side(name, gateway, watch)
        side.sessions = [gateway.session_create(f"soak {name} {n}") for n in range(3)]
        sides.append(side)
    started = time.monotonic()
    until = started + args.minutes * 60.0
    done = threading.Event()
    samples: list[MemorySample] = []
    errors: list[str] = []

    snapshots: list[tracemalloc.Snapshot] = []
    censuses: list[Counter[str]] = []

    def sampler() -> None:
        while not done.wait(2.0):
            samples.append(MemorySample.now((time.monotonic() - started) / 60.0))
            warm = time.monotonic() - started > args.minutes * 12.0
            if args.tracemalloc and warm and not snapshots:
                snapshots.append(tracemalloc.take_snapshot())
            if args.census and warm and not censuses:
                censuses.append(census())

    def loop(side: Side, step: Any, seed: int) -> None:
        own = random.Random(seed)
        pause = threading.Event()
        while time.monotonic() < until:
            try:
                step(side, own, pause)
                if args.trim:
                    trim()
            except Exception as exc:  # a broken step is a finding, not the end of the soak
                errors.append(f"{side.name}: {type(exc).__name__}: {exc}")

    held: list[float] = []
    threads = [
        threading.Thread(target=sampler, name="soak-rss", daemon=True),
        threading.Thread(
            target=lambda: held.extend(lock_database(db, random.Random(rng.random()), until, done)),
            name="soak-locker",
        ),
        threading.Thread(target=loop, args=(sides[0], stream_step, rng.random()), name="soak-a"),
        threading.Thread(target=loop, args=(sides[1], tools_step, rng.random()), name="soak-b"),
    ]
    for t in threads:
        t.start()
    try:
        for t in threads[2:]:
            t.join()
    finally:
        done.set()
        threads[1].join(30)
        for side in sides:  # still running at the end (a loaded machine): the quit stops it
            side.running_at_end = {
                e.turn_id for e in side.expects if not side.watch.ended(e.turn_id)
            }
        reports = [side.gateway.shutdown(timeout_s=20) for side in sides]
        threads[0].join(5)
        stop_hogs(hogs)
    breaks, outcomes = outcome_breaks(sides, db)
    breaks += [f"step failed: {e}" for e in errors]
    for side, report in zip(sides, reports, strict=True):
        breaks += [f"{side.name}: thread left at shutdown: {t}" for t in report.threads_left]
    demo.stop()
    left_threads = [
        t.name for t in threading.enumerate() if t.ident not in baseline_threads and t.is_alive()
    ]
    breaks += [f"thread left: {name}" for name in left_threads]
    replay.stop()
    children = descendants(os.getpid()) - outside
    breaks += [f"child process left: {pid}" for pid in sorted(children)]
    growth = rss_growth(samples)
    if growth.after_warmup_pct > args.rss_growth_pct:
        breaks.append(
            f"RSS grew {growth.after_warmup_pct:.1f} % after the warm-up"
            f" (bound {args.rss_growth_pct:g} %)"
        )
    turns = sum(len(s.expects) for s in sides)
    stop_ms: dict[bool, list[float]] = {False: [], True: []}
    for side in sides:
        for turn_id, seen in side.watch.completes.items():
            for c in seen:
                if c.closed_ms is not None:
                    stop_ms[side.stopped_locked.get(turn_id, False)].append(c.closed_ms)
    grown: list[str] = []
    if censuses:
        after = census()
        diff = Counter({k: after[k] - censuses[0][k] for k in after | censuses[0]})
        grown += [f"{n:+d} {kind}" for kind, n in diff.most_common(15)]
    if snapshots:
        stats = tracemalloc.take_snapshot().compare_to(snapshots[0], "traceback")
        for stat in stats[:10]:
            where = " <- ".join(
                f"{f.filename.rsplit('/', 2)[-1]}:{f.lineno}" for f in stat.traceback
            )
            grown.append(f"{stat.size_diff / 1024:+.0f} KiB ({stat.count_diff:+d}) {where}")
    figures = {
        "minutes": round((time.monotonic() - started) / 60.0, 2),
        "hogs": args.hog,
        "seed": args.seed,
        "load_average": os.getloadavg(),
        "turns": turns,
        "operations": {k: v for s in sides for k, v in sorted(s.ops.items())},
        "outcomes": dict(sorted(outcomes.items())),
        "database_locks": {"count": len(held), "held_s": round(sum(held), 1)},
        "stop_to_connection_closed_ms": percentiles(stop_ms[False]),
        "stop_to_connection_closed_ms_database_locked": percentiles(stop_ms[True]),
        "rss": growth.as_dict(),
        "malloc": {
            "arena_max": arena_max() or capped or None,
            "arenas_at_end": samples[-1].arenas if samples else 0,
            "trim_after_step": args.trim,
        },
        "memory_by_minute": by_minute(samples),
        "rss_samples": len(samples),
        "soak_bookkeeping_kb": bookkeeping_kb(sides),
        "memory_grown_at": grown,
        "breaks": breaks,
    }
    print(json.dumps(figures, indent=2))
    return 1 if breaks else 0


if __name__ == "__main__":
    raise SystemExit(main())
