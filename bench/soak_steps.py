"""The soak's steps: one turn each, on one host, stopped at random, completed, or its host
killed.

* :func:`stream_step`: a turn of the recorded stream (``replay.py``), stopped by the person or
  the system at a random moment, or let finish;
* :func:`tools_step`: on the demo model, a ``shell`` call stopped mid-command, a ``/compress``
  stopped mid-summary, an MCP call (the test server's ``slow``) stopped mid-call or completed,
  a child agent (``delegate:``) stopped mid-stream or completed, or a short turn; on
  PostgreSQL hosts a person's stop is asked through the other host one time in three;
* :func:`kill_step`: a turn (a slow stream, a ``shell`` call, an MCP call or a child agent)
  whose host is killed (``SIGKILL``) at a random moment of it; the host is started again and
  the turn must be closed as ``failed(Crash)`` by crash recovery (the restarted host's, or on
  PostgreSQL the other host's sweep).

Each step records an :class:`Expect` (what the turn should be booked as) on its :class:`Side`;
:data:`IN_FLIGHT` holds the turns submitted and not yet settled (the periodic checks allow them
open in the database).
"""

from __future__ import annotations

import json
import random
import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from soak_hosts import Host

from agent.stops import StopRequest, Surface
from agent.store import CRASH_EXIT_REASON, SessionStore
from contract.errors import GatewayError

SHELL_PROMPT = 'call tool shell with {"command": "echo started; sleep 30"}'
CRASH_WAIT_S = 60.0

LOCKED = threading.Event()
"""Set while the soak holds the SQLite database's write lock."""


class InFlight:
    """The turns submitted and not yet settled, over every host (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._turns: set[str] = set()

    def add(self, turn_id: str) -> None:
        with self._lock:
            self._turns.add(turn_id)

    def discard(self, turn_id: str) -> None:
        with self._lock:
            self._turns.discard(turn_id)

    def snapshot(self) -> set[str]:
        with self._lock:
            return set(self._turns)


IN_FLIGHT = InFlight()


@dataclass
class Expect:
    """What one turn should have been booked as (``stop``: ``user``, ``system``, ``crash`` or
    None)."""

    turn_id: str
    op: str
    stop: str | None = None


@dataclass
class Side:
    """One host, the store it writes (read here for the checks), and what the soak did."""

    host: Host
    reader: Callable[[], SessionStore]
    db: str
    peer: Side | None = None
    expects: list[Expect] = field(default_factory=list)
    ops: Counter[str] = field(default_factory=Counter)
    sessions: list[str] = field(default_factory=list)
    all_sessions: list[str] = field(default_factory=list)
    stopped_locked: dict[str, bool] = field(default_factory=dict)
    running_at_end: set[str] = field(default_factory=set)

    @property
    def name(self) -> str:
        return self.host.name

    def new_session(self) -> str:
        session = self.host.gateway.session_create(f"soak {self.name}")
        self.all_sessions.append(session)
        return session


def pick_session(side: Side, rng: random.Random) -> str:
    """One of the side's recent sessions, or (one time in five, or after a restart) a new one:
    the gateway keeps at most ``max_sessions`` live and evicts the oldest."""
    if not side.sessions or rng.random() < 0.2:
        side.sessions = [*side.sessions[-3:], side.new_session()]
    return rng.choice(side.sessions)


def submit(side: Side, session: str, text: str, op: str, stop: str | None = None) -> Expect:
    turn_id = side.host.gateway.prompt_submit(session, text).turn_id
    IN_FLIGHT.add(turn_id)
    expect = Expect(turn_id, op, stop)
    side.expects.append(expect)
    side.ops[op] += 1
    return expect


def stop(side: Side, session: str, turn_id: str, issuer: str, rng: random.Random) -> None:
    """Stop the turn as ``issuer``; a person's stop on a PostgreSQL host goes through its peer
    one time in three."""
    side.stopped_locked[turn_id] = LOCKED.is_set()
    if issuer == "user":
        request = StopRequest.by_user(Surface.DESK_KEY)
    else:
        request = StopRequest.by_system(Surface.SESSION_EVICTED, "soak: a system stop")
    if side.peer is not None and issuer == "user" and rng.random() < 1 / 3:
        try:  # the peer may be being killed and started again by its own step
            side.peer.host.gateway.session_interrupt(session, request, turn_id=turn_id)
            side.ops["stopped_through_peer"] += 1
            return
        except GatewayError as exc:  # restarting, or refused: by its message
            side.ops["peer_refused: " + re.sub(r"[0-9a-f]{12}", "ID", exc.message)[:80]] += 1
    side.host.gateway.session_interrupt(session, request, turn_id=turn_id)


def settle(side: Side, turn_id: str) -> None:
    side.host.watch.wait(turn_id, "done")
    side.host.watch.forget(turn_id)
    IN_FLIGHT.discard(turn_id)


def stream_step(side: Side, rng: random.Random, pause: threading.Event) -> None:
    """A turn of the recorded stream: stopped by the person or the system, or let finish."""
    session = pick_session(side, rng)
    roll = rng.random()
    op = "stream_user_stop" if roll < 0.6 else "stream_system_stop" if roll < 0.8 else "stream"
    expect = submit(side, session, f"tell me a story {rng.random()}", op)
    if op != "stream":
        if rng.random() < 0.2:
            pause.wait(rng.uniform(0.0, 0.05))  # maybe before the first token
        else:
            side.host.watch.wait(expect.turn_id, "streaming")
            pause.wait(rng.uniform(0.0, 5.0))  # the stream lasts about 4.4 s
        expect.stop = "user" if op == "stream_user_stop" else "system"
        stop(side, session, expect.turn_id, expect.stop, rng)
    settle(side, expect.turn_id)


def mcp_prompt(seconds: float) -> str:
    return "call tool mcp__test__slow with " + json.dumps({"seconds": seconds})


def tools_step(side: Side, rng: random.Random, pause: threading.Event) -> None:
    """A shell call, a compression, an MCP call or a child agent stopped at random, or one
    completed, or a short turn."""
    session = pick_session(side, rng)
    watch = side.host.watch
    roll = rng.random()
    if roll < 0.2:
        expect = submit(side, session, SHELL_PROMPT, "tool_stop", "user")
        watch.wait(expect.turn_id, "tooling")
        pause.wait(rng.uniform(0.0, 0.5))
    elif roll < 0.35:
        turn_id = side.host.gateway.session_compress(session).turn_id
        IN_FLIGHT.add(turn_id)
        watch.compressing(turn_id)
        expect = Expect(turn_id, "compress_stop", "user")
        side.expects.append(expect)
        side.ops[expect.op] += 1
        watch.wait(turn_id, "summarizing")
        pause.wait(rng.uniform(0.0, 0.3))
    elif roll < 0.5:
        expect = submit(side, session, mcp_prompt(600), "mcp_stop", "user")
        watch.wait(expect.turn_id, "tooling")
        pause.wait(rng.uniform(0.0, 1.0))
    elif roll < 0.6:
        expect = submit(side, session, mcp_prompt(rng.uniform(0.0, 0.5)), "mcp")
    elif roll < 0.75:
        task = f"delegate: count the stars {rng.randrange(10**6)} [demo tps=20]"
        expect = submit(side, session, task, "delegate_stop", "user")
        watch.wait(expect.turn_id, "child")
        pause.wait(rng.uniform(0.0, 2.0))
    elif roll < 0.8:
        expect = submit(side, session, "delegate: say hello", "delegate")
    else:
        text = f"reply with exactly: fine {rng.randrange(10**6)} " + "words " * rng.randrange(200)
        expect = submit(side, session, text, "short")
    if expect.stop is not None:
        stop(side, session, expect.turn_id, expect.stop, rng)
    settle(side, expect.turn_id)


KILL_TURNS = (
    ("kill_stream", "tell me a long story [demo tps=30]", "streaming"),
    ("kill_tool", SHELL_PROMPT, "tooling"),
    ("kill_mcp", mcp_prompt(600), "tooling"),
    ("kill_delegate", "delegate: count the stars [demo tps=20]", "child"),
)


def kill_step(side: Side, rng: random.Random, pause: threading.Event) -> list[str]:
    """A turn whose host is killed at a random moment of it; the host starts again. Returns
    breaks: the turn not closed as a crash by recovery within :data:`CRASH_WAIT_S`."""
    session = pick_session(side, rng)
    op, text, when = rng.choice([k for k in KILL_TURNS if side.host.mcp or k[0] != "kill_mcp"])
    expect = submit(side, session, text, op, "crash")
    side.host.watch.wait(expect.turn_id, when)
    pause.wait(rng.uniform(0.0, 1.0))
    side.host.kill()
    side.host.start()
    side.sessions = []  # the old ones are claimed by the dead process until recovery
    breaks: list[str] = []
    deadline = time.monotonic() + CRASH_WAIT_S
    store = side.reader()
    while True:
        row = store.turns.get_turn(expect.turn_id)
        closed = row is not None and row.exit_reason is not None
        if closed or time.monotonic() > deadline:
            break
        pause.wait(0.5)
    seen = side.host.completes(expect.turn_id)
    saw = seen[0].exit_reason if seen else None
    want = {CRASH_EXIT_REASON} if saw in (None, "failed(GatewayExited)") else {saw}
    if row is None or row.exit_reason not in want:
        saved = None if row is None else row.exit_reason
        breaks.append(f"{op} {expect.turn_id} on {side.name}: saved {saved}, want {want}")
    side.host.watch.forget(expect.turn_id)
    IN_FLIGHT.discard(expect.turn_id)
    return breaks
