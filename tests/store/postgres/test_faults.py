"""A database that is away, refused, or newer: writes wait and land when it is back, a refusal
is one line, a newer schema is refused, and two hosts racing for a gone host's session get it
once."""

from __future__ import annotations

import threading

import psycopg
import pytest

from agent.provider.types import ChatMessage
from agent.store import StoreFenced, StoreTooNew, StoreUnreachable
from agent.store.postgres import PostgresStore
from agent.store.postgres.text import MARK, decode, encode
from tests.pg_cluster import Cluster
from tests.pg_proxy import Proxy
from tests.store.postgres.conftest import OpenHost


def test_writes_wait_for_a_database_that_went_away_and_land_when_it_is_back(
    open_host: OpenHost, proxy: Proxy
) -> None:
    store = open_host("host-a:1:1", url=proxy.url("postgres"), reconnect_s=30.0)
    store.sessions.create_session("s1")
    store.turns.start_turn("t1", "s1", "hello")
    proxy.cut()
    assert store.turns.save_draft("t1", "Hel", wait=False) is False  # never waits
    started = threading.Event()
    done = threading.Event()
    failures: list[BaseException] = []

    def write() -> None:
        started.set()
        try:
            store.transcript.append_message("s1", ChatMessage("assistant", "Hello there"))
        except BaseException as exc:  # the test reports it below
            failures.append(exc)
        done.set()

    writer = threading.Thread(target=write)
    writer.start()
    assert started.wait(10)
    accepted = proxy.accepted
    tries = threading.Event()
    for _ in range(200):  # it keeps trying to reach the database, and keeps waiting
        if proxy.accepted > accepted + 1 or tries.wait(0.05):
            break
    assert proxy.accepted > accepted + 1 and not done.is_set()
    proxy.restore()
    assert done.wait(30) and not failures
    writer.join(10)
    assert [m.content for m in store.transcript.all_messages("s1")] == ["hello", "Hello there"]


def test_a_database_away_past_the_bound_is_one_line(open_host: OpenHost, proxy: Proxy) -> None:
    store = open_host("host-a:1:1", url=proxy.url("postgres"), reconnect_s=0.3)
    proxy.cut()
    with pytest.raises(StoreUnreachable) as caught:
        store.sessions.create_session("s1")
    assert "cannot reach the session database" in str(caught.value)
    assert "\n" not in str(caught.value)


def test_an_unreachable_database_at_start_is_one_line_without_the_password(
    pg_cluster: Cluster,
) -> None:
    with pytest.raises(StoreUnreachable) as caught:
        PostgresStore("postgresql://desk:s3cret@127.0.0.1:1/desk")
    text = str(caught.value)
    assert "127.0.0.1:1" in text and "s3cret" not in text and "\n" not in text


def test_a_newer_schema_is_refused(pg_cluster: Cluster, schema: str) -> None:
    PostgresStore(pg_cluster.url, schema=schema).close()
    with psycopg.connect(pg_cluster.url, autocommit=True) as conn:
        conn.execute(f"UPDATE {schema}.desk_schema SET version = 99")
    with pytest.raises(StoreTooNew, match="schema 99"):
        PostgresStore(pg_cluster.url, schema=schema)


def test_two_hosts_racing_for_a_gone_hosts_session_take_it_once(open_host: OpenHost) -> None:
    gone = open_host("host-a:1:1")
    gone.sessions.create_session("s1")
    gone.host.close()  # as if killed: its row and lock are gone, its claim stays
    b, c = open_host("host-b:2:2"), open_host("host-c:3:3")
    barrier = threading.Barrier(2)
    results: dict[str, object] = {}

    def take(store: PostgresStore) -> None:
        barrier.wait(10)
        try:
            results[store.owner] = store.claim_session("s1")
        except StoreFenced as exc:
            results[store.owner] = exc

    threads = [threading.Thread(target=take, args=(s,)) for s in (b, c)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    winners = [o for o, r in results.items() if isinstance(r, int)]
    assert len(winners) == 1, results


@pytest.mark.parametrize("text", ["", "plain", "a\x00b", MARK, MARK + "x", "\x00" * 3, '"q"'])
def test_text_postgresql_cannot_hold_round_trips(text: str) -> None:
    stored = encode(text)
    assert "\x00" not in stored and decode(stored) == text
