"""A live host keeps its turn through a database outage longer than its lease and its write
bound: another host never books it as a crash, and the whole reply is saved when the database
is back. Only a host whose lock the server released, and that did not take it back within its
lease of the database's return, is recovered (``test_hosts`` covers ``kill -9``).

The outage here is a few seconds, not a minute: the host's lease (``outage_child.TTL_S``, 3 s)
and its write bound (``BOUND_S``, 1 s) are made short through the store's options, so the
outage outlasts both, as a 60 s outage outlasts the default 10 s lease and 30 s bound.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest

from agent.store import CRASH_EXIT_REASON
from agent.store.postgres import PostgresStore
from agent.store.postgres.database import Cursor
from tests.pg_cluster import Cluster
from tests.pg_proxy import Proxy
from tests.store.postgres.conftest import OpenHost
from tests.store.postgres.outage_child import REPLY, TTL_S
from tests.support import poll_until
from tests.wire.kit import ROOT, child_env

OWNER = "host-a:4343:1"


class Child:
    """The host of the turn, a process of its own (see :mod:`tests.store.postgres.outage_child`)."""

    def __init__(self, url: str, schema: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.store.postgres.outage_child", url, schema, OWNER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=child_env(),
            cwd=ROOT,
            text=True,
        )
        assert self.line() == "ready"

    def line(self) -> str:
        assert self.proc.stdout is not None
        return self.proc.stdout.readline().strip()

    def send(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()

    def freeze(self) -> None:
        os.kill(self.proc.pid, signal.SIGSTOP)

    def thaw(self) -> None:
        os.kill(self.proc.pid, signal.SIGCONT)

    def end(self) -> None:
        self.thaw()
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)


@pytest.fixture
def child_at() -> Iterator[list[Child]]:
    children: list[Child] = []
    yield children
    for child in children:
        child.end()


def lease_expired(store: PostgresStore) -> bool:
    def q(cur: Cursor) -> bool:
        cur.execute(
            "SELECT bool_and(expires_at < clock_timestamp()) FROM hosts WHERE owner = %s",
            (OWNER,),
        )
        row = cur.fetchone()
        return bool(row and row[0])

    return store._db.read(q)


def sweeps(store: PostgresStore, count: int) -> bool:
    """Wait until ``store``'s heartbeat (and so its crash recovery) ran ``count`` more times."""
    start = store.host.beats
    return poll_until(lambda: store.host.beats >= start + count, 30.0, every_s=0.02)


def assert_saved_whole(store: PostgresStore, child: Child) -> None:
    line = child.line()
    while line == "waiting":  # a write that gave up while the host was frozen: tried again
        line = child.line()
    assert line == "ended True"
    turn = store.turns.get_turn("t1")
    assert turn is not None and turn.status == "completed", turn
    assert turn.exit_reason != CRASH_EXIT_REASON
    messages = store.transcript.all_messages("s1")
    assert [(m.role, m.content, m.partial) for m in messages] == [
        ("user", "explain the moon", False),
        ("assistant", REPLY, False),
    ]


def test_a_frozen_host_whose_lease_expired_keeps_its_turn_while_it_holds_its_lock(
    pg_cluster: Cluster, schema: str, open_host: OpenHost, child_at: list[Child]
) -> None:
    child = Child(pg_cluster.url, schema)
    child_at.append(child)
    b = open_host("host-b:2:2", heartbeat_s=0.1, grace_s=0.3, sweep_s=0.1)
    child.freeze()  # no beat, but its connection (and so its lock) stays with the server
    assert poll_until(lambda: lease_expired(b), 30.0, every_s=0.1)
    assert sweeps(b, 10)
    turn = b.turns.get_turn("t1")
    assert turn is not None and turn.is_open, turn  # the lease's expiry is not a death
    child.thaw()
    child.send("end")
    assert_saved_whole(b, child)


def test_an_outage_past_the_lease_and_the_write_bound_books_no_crash(
    schema: str, open_host: OpenHost, proxy: Proxy, child_at: list[Child]
) -> None:
    url = proxy.url("postgres")
    child = Child(url, schema)
    child_at.append(child)
    b = open_host("host-b:2:2", url=url, heartbeat_s=0.1, grace_s=0.3, sweep_s=0.1)
    proxy.cut()  # the database is away for both hosts: every lock is freed at once
    child.send("end")  # the turn ends during the outage: its write waits
    waits = int(TTL_S) + 1
    for _ in range(waits):  # each wait is one write bound: the outage outlasts the lease
        assert child.line() == "waiting"
    child.freeze()  # and its heartbeat is slow to come back after the outage
    proxy.restore()
    assert poll_until(lambda: lease_expired(b), 30.0, every_s=0.05)
    assert sweeps(b, 5)  # the other host is back and sweeping, past its own grace
    turn = b.turns.get_turn("t1")
    assert turn is not None and turn.is_open, turn  # not booked as a crash
    child.thaw()
    assert_saved_whole(b, child)
