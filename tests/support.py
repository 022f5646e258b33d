"""Helpers shared by the tests: waiting on gateway events with a deadline."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from contract.events import GatewayEvent, MessageComplete, MessageDelta, Payload
from demo_model.config import DemoConfig
from demo_model.records import RequestRecord
from demo_model.server import DemoModelServer

P = TypeVar("P", bound=Payload)


def poll_until(predicate: Callable[[], bool], timeout: float = 10.0, every_s: float = 0.02) -> bool:
    """Check ``predicate`` every ``every_s`` seconds until it holds or ``timeout`` seconds pass.

    For state another process changes (a file, a database row), which no event here announces;
    returns whether it held. Never a fixed wait: it returns as soon as the state is there.
    """
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() >= deadline:
            return False
        time.sleep(every_s)
    return True


class EventLog:
    """Collects a gateway's events; tests wait on it with a deadline (a condition, no sleeps)."""

    def __init__(self) -> None:
        self.events: list[GatewayEvent] = []
        self._cond = threading.Condition()

    def __call__(self, event: GatewayEvent) -> None:
        with self._cond:
            self.events.append(event)
            self._cond.notify_all()

    def wait_for(
        self, predicate: Callable[[list[GatewayEvent]], bool], timeout: float = 5.0
    ) -> bool:
        """Block until ``predicate(events)`` holds or ``timeout`` seconds pass; returns it."""
        with self._cond:
            return self._cond.wait_for(lambda: predicate(self.events), timeout)

    def of_type(self, payload_type: type[P]) -> list[P]:
        """Payloads of one type, in order."""
        with self._cond:
            return [e.payload for e in self.events if isinstance(e.payload, payload_type)]

    def complete(self, turn_id: str, timeout: float = 5.0) -> MessageComplete:
        """Wait for the turn's ``message.complete`` and return it."""

        def done(events: list[GatewayEvent]) -> bool:
            return any(
                isinstance(e.payload, MessageComplete) and e.payload.turn_id == turn_id
                for e in events
            )

        assert self.wait_for(done, timeout), f"turn {turn_id} did not complete in {timeout} s"
        return next(p for p in self.of_type(MessageComplete) if p.turn_id == turn_id)

    def text_of(self, turn_id: str) -> str:
        """The streamed text of a turn, joined from its deltas."""
        return "".join(p.text for p in self.of_type(MessageDelta) if p.turn_id == turn_id)


def cut_short(server: DemoModelServer, timeout: float = 10.0) -> RequestRecord:
    """The server's record of the last request, once it saw the client close the connection;
    checks that the close cut the reply short (what a person notices of a stop that really
    stops, whatever the machine's load): the client left first, the reply never ended by
    itself, it had sent less than half the tokens it would have, and the slot is free again.

    How fast the close came is a figure, not a test: ``bench/cancel_latency.py`` and
    ``bench/wire_stop_latency.py`` print it.
    """

    def closed(records: list[RequestRecord]) -> bool:
        return bool(records) and records[-1].finished and records[-1].peer_closed_at is not None

    assert server.records.wait_for(closed, timeout), "the model server never saw the close"
    record = server.records.last()
    assert record is not None
    assert record.outcome == "client_closed" and record.completed_at is None, record.outcome
    asked = record.request.get("max_tokens")
    budget = min(asked, server.config.max_tokens) if isinstance(asked, int) else None
    budget = budget or server.config.max_tokens
    assert record.tokens_generated < budget / 2, (record.tokens_generated, budget)
    assert record.slot_acquired_at is None or record.slot_released_at is not None
    return record


LOCKER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.readline()
conn.execute("COMMIT")
"""


@contextmanager
def locked(db: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holding the database's write lock until the block ends (or it is told
    to let go: a line on its stdin)."""
    child = subprocess.Popen(
        [sys.executable, "-c", LOCKER, str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "locked\n"
        yield child
    finally:
        release(child)


def release(child: subprocess.Popen[str]) -> None:
    """Let the locker go and wait for it."""
    if child.poll() is None:
        assert child.stdin is not None
        child.stdin.write("\n")
        child.stdin.flush()
        child.stdin.close()
    assert child.wait(10) == 0


CLAIMER = """
import sys
from agent.store import SqliteStore
store = SqliteStore(sys.argv[1])
store.claim_session(sys.argv[2])
print("claimed", flush=True)
sys.stdin.readline()
store.close()
"""


@contextmanager
def claimed(db: Path, session_id: str) -> Iterator[subprocess.Popen[str]]:
    """Another desk process holding ``session_id`` of the database live until the block ends
    (or it is told to close: a line on its stdin; or it is killed)."""
    child = subprocess.Popen(
        [sys.executable, "-c", CLAIMER, str(db), session_id],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "claimed\n"
        yield child
    finally:
        if child.returncode is None and child.poll() is None:
            release(child)
        else:
            child.wait(10)


@contextmanager
def running_demo(
    tokens_per_second: float, *, port: int = 0, **knobs: Any
) -> Iterator[DemoModelServer]:
    """A demo model server on loopback streaming at ``tokens_per_second`` (0: as fast as it
    can), stopped when the block ends.

    Args:
        tokens_per_second: its pace.
        port: its port (0: a free one).
        knobs: more :class:`DemoConfig` fields (``fault=``, ``api_key=``, ``model=``...).
    """
    server = DemoModelServer(DemoConfig(tokens_per_second=tokens_per_second, **knobs), port=port)
    server.start()
    try:
        yield server
    finally:
        server.stop()
