"""A soak: desk's gateway hosts for a long stretch, stopped at random, killed at random, their
database locked at random.

Each host is a process of its own (``bench/soak_host.py``, the gateway served on stdio as
``desk gateway --stdio`` serves it), driven over JSON-RPC (:mod:`bench.soak_hosts`):

* ``sqlite-stream`` and ``sqlite-tools`` share one SQLite file, as two desks on one machine do.
  The stream host talks to ``replay.py`` (llama.cpp's own server, recorded: ~1,000 one-token SSE
  events a second for 4.4 s); its turns are stopped by the person (Esc) or by the system
  (``session.evicted``) at a random moment, or left to complete. The tools host talks to the
  demo model: ``shell`` calls, ``/compress``, MCP calls (the MCP test server) and child agents
  (``delegate:``) stopped at a random moment or completed, and short turns
  (:mod:`bench.soak_steps`);
* ``pg-a`` and ``pg-b`` share a PostgreSQL database (a throwaway cluster started here, as the
  tests start theirs: ``tests/pg_cluster.py``) and run the same mix; a person's stop is asked
  through the other host one time in three. One step in ``--kill-every`` kills its host
  (``SIGKILL``) at a random moment of a turn (a stream, a shell call, an MCP call, a child
  agent) and starts it again: the turn must be closed as ``failed(Crash)`` by crash recovery;
* ``sqlite-crash``: every few minutes a third host on the SQLite file is started, killed in the
  middle of a turn and started again (the restarted host recovers the turn at open), then
  shut down.

Meanwhile another connection takes the SQLite file's write lock (``BEGIN EXCLUSIVE``) for
0.1-2 s at random moments: writes wait, nothing may be lost. With ``--hog N``, N busy processes
take the cores (``bench/load.py``).

Every minute, and at the end with every host shut down, the invariants are checked
(:mod:`bench.soak_checks`), each failure counted in ``breaks``: every turn got exactly one
outcome, booked to the right party, and the database has it (``failed(Crash)`` for a killed
host's turn); no turn left open except those in flight on a live host; no committed message
lost or doubled; no thread of the hosts, no process left; ``PRAGMA integrity_check`` ok.

RSS is that of the hosts that are never killed (``sqlite-tools`` and ``sqlite-stream``), read
from ``/proc`` every 2 s; the soak's own records live in this process and are not counted. One
step in five opens a new session (a host keeps 8 live and evicts the oldest). ``rss`` reports
the growth of their sum from the start (the last fifth's peak over the first sample) and after
the warm-up (the last fifth's peak over the first fifth's peak: on a 60-minute run the first
12 minutes), with the peak of each tenth; the growth after the warm-up must stay within
``--rss-growth-pct``. ``memory_by_minute`` gives each host's RSS and anonymous memory.

Prints one JSON object (figures and breaks); exits 1 when there was any break. Usage::

    .venv/bin/python bench/soak.py [--minutes 5] [--hog 2] [--seed 1] [--rss-growth-pct 10]
        [--kill-every 15]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sqlite3
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from load import start_hogs, stop_hogs  # noqa: E402
from memory import rss_growth  # noqa: E402
from soak_checks import Ledger, integrity, outcome_breaks  # noqa: E402
from soak_hosts import Host  # noqa: E402
from soak_memory import ENV_PATH, ENV_TRACE  # noqa: E402
from soak_processes import DemoProcess, become_subreaper, descendants, reap_orphans  # noqa: E402
from soak_steps import (  # noqa: E402
    IN_FLIGHT,
    LOCKED,
    Side,
    kill_step,
    stream_step,
    tools_step,
)
from stats import percentiles  # noqa: E402
from stream_servers import ReplayServer  # noqa: E402

from agent.store import SessionStore, SqliteStore  # noqa: E402
from agent.store.postgres import PostgresStore  # noqa: E402
from tests.pg_cluster import start_cluster  # noqa: E402

WINDOW = ("--context-window", "4000")
"""The demo model's hosts: a small window, so ``/compress`` has something to do."""

CRASH_HOST_EVERY_S = 180.0
"""How often the ``sqlite-crash`` host is started, killed and started again."""


@dataclass(frozen=True, slots=True)
class HostSample:
    """One reading of the measured hosts' memory, KiB; ``minute`` since the soak began."""

    minute: float
    rss_kb: int
    per_host: dict[str, int]


class Readers:
    """Stores this process reads the databases with (no crash recovery of its own), one per
    database and thread."""

    def __init__(self) -> None:
        self._local = threading.local()
        self._lock = threading.Lock()
        self.opened: list[SessionStore] = []

    def of(self, db: str) -> Callable[[], SessionStore]:
        def get() -> SessionStore:
            mine: dict[str, SessionStore] = self._local.__dict__.setdefault("stores", {})
            if db not in mine:
                if "://" in db:
                    mine[db] = PostgresStore(db, recover=False)
                else:
                    mine[db] = SqliteStore(db, recover=False, busy_timeout_s=60.0)
                with self._lock:
                    self.opened.append(mine[db])
            return mine[db]

        return get

    def close(self) -> None:
        with self._lock:
            for store in self.opened:
                store.close()


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


def memory_marks(measured: list[Side], tmp: Path) -> dict[str, Any]:
    """Ask each measured host what grew since its mark (``SIGUSR2``, :mod:`bench.soak_memory`)
    and read its answer (bounded wait)."""
    found: dict[str, Any] = {}
    for s in measured:
        path = tmp / f"{s.name}.memory.json"
        os.kill(s.host.pid, signal.SIGUSR2)
        deadline = time.monotonic() + 60.0
        while not path.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        found[s.name] = json.loads(path.read_text()) if path.exists() else None
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--hog", type=int, default=0, help="busy processes on the cores")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rss-growth-pct", type=float, default=10.0)
    parser.add_argument("--kill-every", type=int, default=15, help="PostgreSQL steps per kill")
    parser.add_argument("--census", action="store_true", help="measured hosts: types grown")
    parser.add_argument(
        "--tracemalloc", action="store_true", help="measured hosts: the places that grew most"
    )
    args = parser.parse_args(argv)
    subreaper = become_subreaper()
    rng = random.Random(args.seed)
    tmp = Path(tempfile.mkdtemp(prefix="desk-soak-"))
    db = tmp / "desk.db"
    baseline_threads = {t.ident for t in threading.enumerate()}
    cluster = start_cluster()
    replay = ReplayServer()
    demo = DemoProcess(300.0, "--slots", "16")
    hogs = start_hogs(args.hog)
    outside = {replay.proc.pid, demo.proc.pid} | {h.pid for h in hogs}
    log = (tmp / "hosts.log").open("w")
    readers = Readers()

    def side(
        name: str, where: str, *extra: str, replayed: bool = False, marks: bool = False
    ) -> Side:
        url, model = (replay.base_url, "replay") if replayed else (demo.base_url, demo.model)
        env = None
        if marks and (args.census or args.tracemalloc):
            env = {**os.environ, ENV_PATH: str(tmp / f"{name}.memory.json")}
            env[ENV_TRACE] = "1" if args.tracemalloc else "0"
        host = Host(name, where, url, model, tmp, log, *extra, env=env)
        return Side(host, readers.of(where), where)

    sides = [
        side("sqlite-stream", str(db), "--no-tools", replayed=True, marks=True),
        side("sqlite-tools", str(db), "--mcp", *WINDOW, marks=True),
        side("pg-a", cluster.url, "--mcp", *WINDOW),
        side("pg-b", cluster.url, "--mcp", *WINDOW),
    ]
    sides[2].peer, sides[3].peer = sides[3], sides[2]
    measured = sides[:2]
    crash_side: list[Side] = []
    started = time.monotonic()
    until = started + args.minutes * 60.0
    done = threading.Event()
    samples: list[HostSample] = []
    errors: list[str] = []
    breaks: list[str] = []
    ledger = Ledger()
    steps = [0]

    def sampler() -> None:
        marked = not (args.census or args.tracemalloc)
        while not done.wait(2.0):
            if not marked and time.monotonic() - started > args.minutes * 12.0:
                marked = True
                for s in measured:
                    os.kill(s.host.pid, signal.SIGUSR1)
            per = {s.name: s.host.rss_kb() for s in measured}
            minute = (time.monotonic() - started) / 60.0
            samples.append(HostSample(round(minute, 2), sum(per.values()), per))
            reap_orphans(outside | {s.host.pid for s in sides + crash_side})

    def checker() -> None:
        while not done.wait(60.0):
            try:
                breaks.extend(ledger.check(sides + crash_side, IN_FLIGHT.snapshot()))
            except Exception as exc:
                errors.append(f"check: {type(exc).__name__}: {exc}")

    def crash_cycle(own: random.Random, pause: threading.Event) -> None:
        if not crash_side:
            crash_side.append(side("sqlite-crash", str(db), *WINDOW))
        else:
            crash_side[0].host.start()
        breaks.extend(kill_step(crash_side[0], own, pause))
        crash_side[0].host.gateway.shutdown(timeout_s=20)

    def loop(s: Side, seed: int) -> None:
        own = random.Random(seed)
        pause = threading.Event()
        next_crash = started + CRASH_HOST_EVERY_S / 2
        while time.monotonic() < until:
            try:
                if s.name == "sqlite-stream" and time.monotonic() > next_crash:
                    next_crash += CRASH_HOST_EVERY_S
                    crash_cycle(own, pause)
                elif s.peer is not None and own.randrange(args.kill_every) == 0:
                    breaks.extend(kill_step(s, own, pause))
                elif s.name == "sqlite-stream":
                    stream_step(s, own, pause)
                else:
                    tools_step(s, own, pause)
                steps[0] += 1
            except Exception as exc:  # a broken step is a finding, not the end of the soak
                at = [f"{f.name}:{f.lineno}" for f in traceback.extract_tb(exc.__traceback__)]
                errors.append(f"{s.name}: {type(exc).__name__}: {exc} ({' < '.join(at[-4:])})")

    held: list[float] = []
    threads = [
        threading.Thread(target=sampler, name="soak-rss", daemon=True),
        threading.Thread(target=checker, name="soak-check", daemon=True),
        threading.Thread(
            target=lambda: held.extend(lock_database(db, random.Random(rng.random()), until, done)),
            name="soak-locker",
        ),
        *(
            threading.Thread(target=loop, args=(s, rng.random()), name=f"soak-{s.name}")
            for s in sides
        ),
    ]
    for t in threads:
        t.start()
    try:
        for t in threads[3:]:
            t.join()
    finally:
        done.set()
        threads[2].join(30)
        threads[1].join(120)
        grown = memory_marks(measured, tmp) if args.census or args.tracemalloc else {}
        for s in sides + crash_side:  # still running at the end (a loaded machine): the quit
            s.running_at_end = {e.turn_id for e in s.expects if not s.host.watch.ended(e.turn_id)}
        reports = [s.host.gateway.shutdown(timeout_s=20) for s in sides + crash_side]
        threads[0].join(5)
        stop_hogs(hogs)
    for s, report in zip(sides + crash_side, reports, strict=True):
        breaks.extend(f"{s.name}: thread left at shutdown: {t}" for t in report.threads_left)
    try:
        breaks.extend(ledger.check(sides + crash_side, set(), final=True))
        found, outcomes = outcome_breaks(sides + crash_side)
        breaks.extend(found)
    finally:
        readers.close()
    breaks.extend(integrity(db))
    breaks.extend(f"step failed: {e}" for e in errors)
    log.close()
    demo.stop()
    replay.stop()
    cluster.remove()
    left_threads = [
        t.name for t in threading.enumerate() if t.ident not in baseline_threads and t.is_alive()
    ]
    breaks.extend(f"thread left: {name}" for name in left_threads)
    children: set[int] = set()
    deadline = time.monotonic() + 40.0  # a killed host's shell command may still sleep
    while time.monotonic() < deadline:
        reap_orphans(outside | {s.host.pid for s in sides + crash_side})
        children = descendants(os.getpid()) - outside
        if not children:
            break
        time.sleep(1.0)
    breaks.extend(f"process left: {pid}" for pid in sorted(children))
    growth = rss_growth(samples)  # type: ignore[arg-type]
    if growth.after_warmup_pct > args.rss_growth_pct:
        breaks.append(
            f"RSS grew {growth.after_warmup_pct:.1f} % after the warm-up"
            f" (bound {args.rss_growth_pct:g} %)"
        )
    per_host = {
        s.name: rss_growth(
            [HostSample(m.minute, m.per_host[s.name], {}) for m in samples]  # type: ignore[misc]
        ).as_dict()
        for s in measured
    }
    stop_ms: dict[bool, list[float]] = {False: [], True: []}
    for s in sides:
        for w in s.host.watches:
            for turn_id, seen in w.completes.items():
                for c in seen:
                    if c.closed_ms is not None:
                        stop_ms[s.stopped_locked.get(turn_id, False)].append(c.closed_ms)
    by_minute: dict[int, HostSample] = {}
    for m in samples:
        by_minute.setdefault(int(m.minute), m)
    figures: dict[str, Any] = {
        "minutes": round((time.monotonic() - started) / 60.0, 2),
        "hogs": args.hog,
        "seed": args.seed,
        "load_average": os.getloadavg(),
        "steps": steps[0],
        "turns": sum(len(s.expects) for s in sides + crash_side),
        "kills": {s.name: s.host.kills for s in sides + crash_side},
        "operations": {s.name: dict(sorted(s.ops.items())) for s in sides + crash_side},
        "outcomes": dict(sorted(outcomes.items())),
        "database_locks": {"count": len(held), "held_s": round(sum(held), 1)},
        "invariant_rounds": ledger.rounds,
        "stop_to_connection_closed_ms": percentiles(stop_ms[False]),
        "stop_to_connection_closed_ms_database_locked": percentiles(stop_ms[True]),
        "rss": growth.as_dict(),
        "rss_per_host": per_host,
        "memory_by_minute": [asdict(m) for _, m in sorted(by_minute.items())],
        "rss_samples": len(samples),
        "subreaper": subreaper,
        "memory_grown_at": grown,
        "breaks": breaks,
    }
    print(json.dumps(figures, indent=2))
    return 1 if breaks else 0


if __name__ == "__main__":
    raise SystemExit(main())
