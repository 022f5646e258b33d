"""Schedules on two hosts of one PostgreSQL database: every due time fires exactly one turn,
on whichever host won its row, and the schedule's session moves between them; a stop through
either host's API reaches the firing's turn."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from agent.provider.client import ProviderConfig
from agent.store.postgres import PostgresStore
from tests.schedules.conftest import START, Clock, every
from tests.store.postgres.conftest import OpenHost
from tests.support import poll_until
from tui_gateway.gateway import Gateway, GatewayConfig
from tui_gateway.schedules import Scheduler

Host = tuple[Gateway, PostgresStore]


@pytest.fixture
def pg_hosts(provider: ProviderConfig, open_host: OpenHost) -> Iterator[Callable[..., Host]]:
    """Opens a gateway on its own store of the test's schema, as host ``owner``."""
    made: list[Gateway] = []

    def make(owner: str, **options: Any) -> Host:
        store = open_host(owner, sweep_s=0.2, heartbeat_s=0.2, grace_s=0.5, **options)
        gateway = Gateway(GatewayConfig(provider=provider), store=store)
        store.stops.wait_listening(10)
        made.append(gateway)
        return gateway, store

    yield make
    for gateway in made:
        gateway.shutdown(timeout_s=5)


def test_every_second_for_five_seconds_on_two_hosts_runs_five_turns_none_twice(
    pg_hosts: Callable[..., Host],
) -> None:
    (a, store), (b, _) = pg_hosts("host-a:1:1"), pg_hosts("host-b:2:2")
    clock = Clock()
    schedulers = [
        Scheduler(gateway, {"tick": every()}, clock=clock, tick_s=0.02).start()
        for gateway in (a, b)
    ]
    try:
        for second in range(1, 6):
            clock.set(START + second + 0.25)
            for scheduler in schedulers:
                scheduler.wake()
            assert poll_until(lambda s=second: _ended(store) >= s, 30)  # type: ignore[misc]
    finally:
        for scheduler in schedulers:
            scheduler.stop()
    ran = sorted(d - START for s in schedulers for _, d, _ in s.ran)
    assert ran == [1.0, 2.0, 3.0, 4.0, 5.0]  # each due time on one host, none twice
    session_id = store.firings.schedule_session("tick")
    assert session_id is not None
    turns = store.turns.list_turns(session_id)
    assert [t.exit_reason for t in turns] == ["completed"] * 5
    rows = store.firings.last_firings("tick", limit=10)
    assert sorted(r.due_at - START for r in rows) == ran
    assert sorted(r.turn_id for r in rows) == sorted(t.id for t in turns)
    sessions = [r for r in store.sessions.list_sessions() if r.title == "tick"]
    assert [r.id for r in sessions] == [session_id]  # one session, whichever host made it


def test_due_times_reached_in_a_burst_still_fire_once_each(
    pg_hosts: Callable[..., Host],
) -> None:
    (a, store), (b, _) = pg_hosts("host-a:1:1"), pg_hosts("host-b:2:2")
    clock = Clock()
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    schedulers = [
        Scheduler(gateway, {"tick": every()}, clock=clock, tick_s=0.01).start()
        for gateway in (a, b)
    ]
    try:
        now = START
        for _ in range(8):  # the clock jumps on while firings run, by 0.3 to 2 s
            now += rng.uniform(0.3, 2.0)
            clock.set(now)
            for scheduler in rng.sample(schedulers, 2):
                scheduler.wake()
            # Both loops saw this time (what was due is claimed), then every claim ran out.
            assert clock.seen_by(2), f"seed {seed}"
            assert poll_until(lambda: _ended(store) == len(store.firings.last_firings("tick", 50)))
    finally:
        for scheduler in schedulers:
            scheduler.stop()
    dues = [d for s in schedulers for _, d, _ in s.ran]
    assert len(dues) == len(set(dues)) >= 1, f"seed {seed}"  # never twice
    session_id = store.firings.schedule_session("tick")
    assert session_id is not None
    assert len(store.turns.list_turns(session_id)) == len(dues)


def _ended(store: PostgresStore) -> int:
    return sum(r.outcome is not None for r in store.firings.last_firings("tick", limit=50))
