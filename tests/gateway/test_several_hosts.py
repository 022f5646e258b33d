"""Two gateways on one PostgreSQL store, in one process (each its own host): a stop asked of
host B stops the turn host A runs, booked once with B's stop; an event stream resumes on B; a
database that goes away mid-turn keeps the turn, and its text lands when it is back, even after
an outage longer than the hosts' lease and the write bound (no ``failed(Crash)``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from agent.provider.client import ProviderConfig
from agent.stops import StopRequest, Surface
from agent.store import StoreUnreachable
from agent.store.postgres import PostgresStore
from contract.errors import GatewayError
from contract.events import (
    CompressionComplete,
    CompressionProgressed,
    MessageComplete,
    MessageDelta,
    StoreFailed,
)
from demo_model.server import DemoModelServer
from tests.compression.kit import WINDOW, long_transcript
from tests.pg_proxy import Proxy
from tests.store.postgres.conftest import OpenHost
from tests.support import EventLog, cut_short, poll_until
from tui_gateway.gateway import Gateway, GatewayConfig
from tui_gateway.wire.dispatch import Dispatcher
from tui_gateway.wire.replay import ReplayRing

Host = tuple[Gateway, EventLog, PostgresStore]


@pytest.fixture
def hosts(provider: ProviderConfig, open_host: OpenHost) -> Iterator[Callable[..., Host]]:
    """Opens a gateway on its own store of the test's schema, as host ``owner``."""
    made: list[Gateway] = []

    def make(owner: str, settings: dict[str, Any] | None = None, **options: Any) -> Host:
        store = open_host(owner, sweep_s=0.2, heartbeat_s=0.2, grace_s=0.5, **options)
        gateway = Gateway(GatewayConfig(provider=provider, **(settings or {})), store=store)
        log = EventLog()
        gateway.subscribe(log)
        store.stops.wait_listening(10)
        made.append(gateway)
        return gateway, log, store

    yield make
    for gateway in made:
        gateway.shutdown(timeout_s=5)


def streaming(log: EventLog, turn_id: str) -> bool:
    return log.wait_for(
        lambda events: any(
            isinstance(e.payload, MessageDelta) and e.payload.turn_id == turn_id for e in events
        ),
        10.0,
    )


def test_a_stop_through_host_b_stops_the_turn_on_host_a_once(
    hosts: Callable[..., Host], demo_server: DemoModelServer
) -> None:
    # No look without a notification on A: the stop must come by its NOTIFY.
    a, a_log, store = hosts("host-a:1:1", stop_recheck_s=3600.0)
    b, _b_log, _ = hosts("host-b:2:2")
    demo_server.configure(tokens_per_second=40.0)
    session = a.session_create()
    turn_id = a.prompt_submit(session, "tell me a long story").turn_id
    assert streaming(a_log, turn_id)
    stop = StopRequest.by_user(Surface.API_STOP, "stopped through host b")
    assert b.session_interrupt(session, stop) == turn_id
    done = a_log.complete(turn_id, timeout=10)
    cut_short(demo_server)  # the server saw the close, cutting the reply short
    assert done.exit_reason == "interrupted_by_user"
    assert done.stop is not None and (done.stop.surface, done.stop.reason) == (
        "api.stop",
        "stopped through host b",
    )
    row = store.turns.get_turn(turn_id)
    assert row is not None and (row.exit_reason, row.stop_surface, row.stop_reason) == (
        "interrupted_by_user",
        "api.stop",
        "stopped through host b",
    )
    # Exactly once: a second stop through b goes to a (it holds the session), which finds
    # nothing running, and the outcome stands.
    late = StopRequest.by_system(Surface.API_DISCONNECT, "late")
    assert b.session_interrupt(session, late) == ""
    assert _wait(lambda: store.stops.taken == 2)
    assert len(a_log.of_type(MessageComplete)) == 1
    assert store.turns.get_turn(turn_id).exit_reason == "interrupted_by_user"  # type: ignore[union-attr]


def test_a_compression_cancel_through_host_b_reaches_host_a(
    hosts: Callable[..., Host], demo_server: DemoModelServer
) -> None:
    (a, a_log, _store), (b, _b_log, _) = hosts("host-a:1:1"), hosts("host-b:2:2")
    demo_server.configure(tokens_per_second=40.0)
    session = a.session_create()
    turn_id = a.prompt_submit(session, "tell me a long story").turn_id
    assert streaming(a_log, turn_id)
    # No compression runs on a: the cancel travels, and a books nothing for it.
    stop = StopRequest.by_user(Surface.DESK_BUTTON, "cancel the compression")
    assert b.compression_cancel(session, stop) is True
    a_store_stops = _store.stops
    assert _wait(lambda: a_store_stops.taken == 1)
    a.session_interrupt(session, StopRequest.by_user(Surface.DESK_KEY))
    assert a_log.complete(turn_id, timeout=10).stop.surface == "desk.key"  # type: ignore[union-attr]


@pytest.mark.parametrize("how", ["interrupt", "compression_cancel"])
def test_a_stop_through_host_b_stops_a_compress_running_on_host_a(
    how: str, hosts: Callable[..., Host], demo_server: DemoModelServer
) -> None:
    # A /compress is no turn of the store: host b finds it by the compression's lease.
    settings = {"context_window": WINDOW, "compress_threshold": 100.0}
    (a, a_log, store), (b, _b_log, _) = hosts("host-a:1:1", settings), hosts("host-b:2:2")
    demo_server.configure(tokens_per_second=60.0)
    made = store.sessions.create_session(title="long", model="demo", messages=long_transcript())
    session = a.session_resume(made.id).session_id
    turn_id = a.session_compress(session).turn_id
    assert a_log.wait_for(
        lambda _e: any(p.tokens_out >= 3 for p in a_log.of_type(CompressionProgressed)), 20.0
    )
    stop = StopRequest.by_user(Surface.API_STOP, "stopped through host b")
    if how == "interrupt":
        assert b.session_interrupt(session, stop, turn_id=turn_id) == turn_id
    else:
        assert b.compression_cancel(session, stop) is True
    assert_cancelled_through_the_api(a_log, turn_id)
    assert store.leases.get_lease(session) is None  # released: the next one may run
    # Nothing runs any more: a second stop goes to a, which holds the session, and stops nothing.
    assert b.session_interrupt(session, stop) == ""
    with pytest.raises(GatewayError, match="no session 'nowhere'"):
        b.session_interrupt("nowhere", stop)


def assert_cancelled_through_the_api(log: EventLog, turn_id: str) -> None:
    """The compression ``turn_id`` ended cancelled, by the person's stop through the API."""

    def ended() -> bool:
        return any(c.turn_id == turn_id for c in log.of_type(CompressionComplete))

    assert log.wait_for(lambda _e: ended(), 20.0)
    done = next(c for c in log.of_type(CompressionComplete) if c.turn_id == turn_id)
    assert done.status == "cancelled"
    assert done.stop is not None and (done.stop.issuer, done.stop.surface) == ("user", "api.stop")


@pytest.mark.parametrize("how", ["interrupt", "compression_cancel"])
def test_a_stop_through_host_b_right_after_a_compress_started_on_host_a_stops_it(
    how: str, hosts: Callable[..., Host], demo_server: DemoModelServer
) -> None:
    # Before it takes its lease a /compress is found by the session's claim (a holds it live).
    settings = {"context_window": WINDOW, "compress_threshold": 100.0}
    (a, a_log, store), (b, _b_log, _) = hosts("host-a:1:1", settings), hosts("host-b:2:2")
    demo_server.configure(tokens_per_second=60.0, prompt_delay_s=1.0)
    made = store.sessions.create_session(title="long", model="demo", messages=long_transcript())
    session = a.session_resume(made.id).session_id
    turn_id = a.session_compress(session).turn_id
    stop = StopRequest.by_user(Surface.API_STOP, "stopped through host b")
    if how == "interrupt":
        assert b.session_interrupt(session, stop) is not None
    else:
        assert b.compression_cancel(session, stop) is True
    assert_cancelled_through_the_api(a_log, turn_id)
    a.shutdown(timeout_s=5)  # a gives its claim back: the session is live nowhere now
    with pytest.raises(GatewayError, match="nothing to stop in session .*: it is live on no"):
        b.session_interrupt(session, stop)


def test_an_event_stream_resumes_on_another_host_without_gaps_or_duplicates(
    hosts: Callable[..., Host], demo_server: DemoModelServer
) -> None:
    (a, a_log, _), (b, _b_log, _) = hosts("host-a:1:1"), hosts("host-b:2:2")
    demo_server.configure(tokens_per_second=400.0)
    session = a.session_create()
    turn_id = a.prompt_submit(session, "tell me a story").turn_id
    final = a_log.complete(turn_id, timeout=20)
    mine = [e for e in a_log.events if e.session_id == session]
    cut = next(i for i, e in enumerate(mine) if isinstance(e.payload, MessageDelta))
    seen, last = mine[: cut + 1], mine[cut].seq  # the client saw these, then reconnected to b
    on_b = Dispatcher(b, ReplayRing())

    def resumed() -> dict[str, Any]:
        return on_b.call("session.events.since", {"session_id": session, "seq": last})

    assert _wait(lambda: resumed()["events"][-1]["type"] == "message.complete")
    rest = resumed()["events"]
    seqs = [e["seq"] for e in rest]
    assert seqs == sorted(set(seqs)) and seqs[0] > last and not resumed()["truncated"]
    text = "".join(e.payload.text for e in seen if isinstance(e.payload, MessageDelta)) + "".join(
        e["payload"]["text"] for e in rest if e["type"] == "message.delta"
    )
    assert text == final.text


def test_a_database_that_goes_away_mid_turn_keeps_the_turn_and_writes_it_when_back(
    proxy: Proxy,
    hosts: Callable[..., Host],
    demo_server: DemoModelServer,
    open_host: OpenHost,
) -> None:
    a, a_log, _ = hosts("host-a:1:1", url=proxy.url("postgres"), reconnect_s=60.0)
    demo_server.configure(tokens_per_second=200.0)
    session = a.session_create()
    turn_id = a.prompt_submit(session, "tell me a story").turn_id
    assert streaming(a_log, turn_id)
    proxy.cut()  # the database goes away mid-turn
    record = demo_server.records.wait_for_record(lambda r: r.outcome != "running", 20.0)
    assert record is not None and record.outcome == "completed"  # the turn ran to its end
    proxy.restore()
    done = a_log.complete(turn_id, timeout=60)
    assert done.exit_reason == "completed" and not a_log.of_type(StoreFailed)
    reader = open_host("reader:9:9", recover=False)

    def saved() -> bool:  # the writes waited for the database, and land once it is back
        messages = [(m.role, m.content) for m in reader.transcript.all_messages(session)]
        row = reader.turns.get_turn(turn_id)
        return messages[-1] == ("assistant", done.text) and row is not None and not row.is_open

    assert _wait(saved, 60.0), "the reply was never written once the database was back"
    assert reader.turns.get_turn(turn_id).exit_reason == "completed"  # type: ignore[union-attr]


def test_an_outage_past_the_lease_and_the_write_bound_saves_the_reply_whole_on_both_hosts(
    proxy: Proxy,
    hosts: Callable[..., Host],
    demo_server: DemoModelServer,
    open_host: OpenHost,
) -> None:
    """The outage is a few seconds, not a minute: the hosts' lease (1 s) and host A's write
    bound (0.5 s) are made short through the store's options, so the outage outlasts both, as
    a 60 s outage outlasts the default 10 s lease and 30 s bound."""
    url = proxy.url("postgres")
    a, a_log, _ = hosts("host-a:1:1", url=url, reconnect_s=0.5, host_ttl_s=1.0)
    _b, _b_log, b_store = hosts("host-b:2:2", url=url, reconnect_s=2.0, host_ttl_s=1.0)
    demo_server.configure(tokens_per_second=200.0)
    session = a.session_create()
    turn_id = a.prompt_submit(session, "tell me a story").turn_id
    assert streaming(a_log, turn_id)
    proxy.cut()  # the database goes away for both hosts mid-turn
    record = demo_server.records.wait_for_record(lambda r: r.outcome != "running", 20.0)
    assert record is not None and record.outcome == "completed"
    for n in range(2):  # each try waits b's 2 s bound: the outage outlasts lease and bounds
        with pytest.raises(StoreUnreachable):
            b_store.sessions.create_session(f"probe-{n}")
    proxy.restore()
    done = a_log.complete(turn_id, timeout=60)
    assert done.exit_reason == "completed" and not a_log.of_type(StoreFailed)
    reader = open_host("reader:9:9", recover=False)

    def closed() -> bool:
        row = reader.turns.get_turn(turn_id)
        return row is not None and not row.is_open

    assert _wait(closed, 60.0)
    row = reader.turns.get_turn(turn_id)
    assert row is not None and row.exit_reason == "completed", row  # no failed(Crash)
    messages = [(m.role, m.content, m.partial) for m in reader.transcript.all_messages(session)]
    assert messages[-1] == ("assistant", done.text, False)


def _wait(check: Callable[[], bool], timeout_s: float = 20.0) -> bool:
    return poll_until(check, timeout_s, every_s=0.05)
