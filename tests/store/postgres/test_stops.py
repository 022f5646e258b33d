"""Stop rows: written with a notification, taken once by the host they name (concurrent takers
included), and waiting rows taken when a host's listener (re)connects.

The listener's safety net (a look every few seconds without a notification) is made an hour
long here: a stop must arrive by its ``NOTIFY``, or by the drain on (re)connecting."""

from __future__ import annotations

import threading

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.store import RunningTurn, StopKind, StopLetter
from agent.store.postgres import PostgresStore
from tests.pg_proxy import Proxy
from tests.store.postgres.conftest import OpenHost
from tests.support import poll_until

NO_RECHECK = 3600.0


def running(store: PostgresStore, session: str = "s1", turn: str = "t1") -> RunningTurn:
    store.sessions.create_session(session)
    store.turns.start_turn(turn, session, "a long story")
    found = store.stops.running_turn(session)
    assert found is not None and found.owner == store.owner
    return found


def send(sender: PostgresStore, target: RunningTurn, reason: str = "stop it") -> int:
    return sender.stops.send(
        target, StopKind.TURN, issuer="user", surface="api.stop", reason=reason
    )


def test_a_stop_reaches_the_host_that_runs_the_turn(open_host: OpenHost) -> None:
    a = open_host("host-a:1:1", stop_recheck_s=NO_RECHECK)
    b = open_host("host-b:2:2")
    target = running(a)
    got: list[StopLetter] = []
    arrived = threading.Event()

    def deliver(letters: list[StopLetter]) -> None:
        got.extend(letters)
        arrived.set()

    a.stops.listen(deliver)
    assert a.stops.wait_listening(10)
    assert b.stops.running_turn("s1", "t1") == target
    assert b.stops.running_turn("s1", "other") is None
    row = send(b, target)
    assert arrived.wait(10)
    (letter,) = got
    assert (letter.id, letter.session_id, letter.turn_id, letter.kind) == (
        row,
        "s1",
        "t1",
        StopKind.TURN,
    )
    assert (letter.issuer, letter.surface, letter.reason, letter.sent_by) == (
        "user",
        "api.stop",
        "stop it",
        "host-b:2:2",
    )
    assert letter.age_s >= 0.0
    assert a.stops.taken == 1 and b.stops.taken == 0


def test_each_stop_is_announced_while_the_host_listens(open_host: OpenHost) -> None:
    """Three stops one after another, each awaited before the next is sent: only a
    notification can wake the listener for each."""
    a = open_host("host-a:1:1", stop_recheck_s=NO_RECHECK)
    b = open_host("host-b:2:2")
    target = running(a)
    got: list[StopLetter] = []
    arrived = threading.Semaphore(0)

    def deliver(letters: list[StopLetter]) -> None:
        got.extend(letters)
        arrived.release()

    a.stops.listen(deliver)
    assert a.stops.wait_listening(10)
    for n in range(3):
        row = send(b, target, f"stop {n}")
        assert arrived.acquire(timeout=20), f"stop {n} was not announced"
        assert got[-1].id == row


def test_stops_sent_while_a_host_was_away_are_taken_when_it_listens(
    open_host: OpenHost,
) -> None:
    a = open_host("host-a:1:1", stop_recheck_s=NO_RECHECK)
    b = open_host("host-b:2:2")
    target = running(a)
    first, second = send(b, target, "one"), send(b, target, "two")
    got: list[StopLetter] = []
    arrived = threading.Event()

    def deliver(letters: list[StopLetter]) -> None:
        got.extend(letters)
        arrived.set()

    a.stops.listen(deliver)
    assert arrived.wait(10)
    assert [(x.id, x.reason) for x in got] == [(first, "one"), (second, "two")]


def test_a_stop_sent_while_the_listener_was_cut_off_is_taken_when_it_reconnects(
    open_host: OpenHost, proxy: Proxy
) -> None:
    """The stop's notification goes to nobody (A's listener has no connection then): only the
    drain on reconnecting delivers it."""
    a = open_host(
        "host-a:1:1", url=proxy.url("postgres"), stop_recheck_s=NO_RECHECK, reconnect_s=60
    )
    b = open_host("host-b:2:2")
    target = running(a)
    got: list[StopLetter] = []
    arrived = threading.Event()

    def deliver(letters: list[StopLetter]) -> None:
        got.extend(letters)
        arrived.set()

    a.stops.listen(deliver)
    assert a.stops.wait_listening(10)
    proxy.cut()
    assert poll_until(lambda: not a.stops.wait_listening(0), 20)
    row = send(b, target, "while away")
    assert not arrived.is_set()
    proxy.restore()
    assert arrived.wait(30), "the stop sent while the listener was away was never taken"
    assert [x.id for x in got] == [row]


def test_two_takers_of_one_host_take_each_stop_once(open_host: OpenHost) -> None:
    a = open_host("host-a:1:1")
    a_again = open_host("host-a:1:1")  # a second store of the same host
    b = open_host("host-b:2:2")
    target = running(a)
    rows = {send(b, target, f"stop {n}") for n in range(40)}
    barrier = threading.Barrier(2)
    taken: list[list[int]] = [[], []]

    def take(index: int, store: PostgresStore) -> None:
        barrier.wait(10)
        conn = store._db.connect()
        try:
            with conn.cursor() as cur:
                taken[index] = [x.id for x in store.stops.take(cur)]
        finally:
            conn.close()

    threads = [threading.Thread(target=take, args=(i, s)) for i, s in enumerate((a, a_again))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert set(taken[0]).isdisjoint(taken[1])
    assert set(taken[0]) | set(taken[1]) == rows


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(sends=st.lists(st.integers(min_value=0, max_value=2), min_size=1, max_size=12))
def test_random_senders_and_takers_book_each_stop_once(
    open_host: OpenHost, sends: list[int]
) -> None:
    hosts = [open_host(f"host-{n}:{n}:1") for n in range(3)]
    sessions: list[RunningTurn] = []
    for n, store in enumerate(hosts):
        sid = f"s{len(sends)}-{n}-{id(sends)}"
        store.sessions.create_session(sid)
        store.turns.start_turn(f"t-{sid}", sid, "x")
        turn = store.stops.running_turn(sid)
        assert turn is not None
        sessions.append(turn)
    sent = {n: set() for n in range(3)}  # type: dict[int, set[int]]
    barrier = threading.Barrier(len(sends) + len(hosts))
    got: dict[int, list[int]] = {n: [] for n in range(3)}

    def sender(target: int) -> None:
        barrier.wait(20)
        sent[target].add(send(hosts[(target + 1) % 3], sessions[target]))

    def taker(n: int) -> None:
        barrier.wait(20)
        conn = hosts[n]._db.connect()
        try:
            with conn.cursor() as cur:
                got[n].extend(x.id for x in hosts[n].stops.take(cur))
        finally:
            conn.close()

    threads = [threading.Thread(target=sender, args=(t,)) for t in sends]
    threads += [threading.Thread(target=taker, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    for n in range(3):  # whatever the interleaving left waiting is taken later, once
        conn = hosts[n]._db.connect()
        with conn.cursor() as cur:
            got[n].extend(x.id for x in hosts[n].stops.take(cur))
        conn.close()
        assert sorted(got[n]) == sorted(sent[n])
