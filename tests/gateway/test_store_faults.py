"""A database another program holds delays the gateway's writes, never drops them.

Another process takes SQLite's write lock and keeps it far longer than the store's busy
timeout while turns run. The turns run and show their replies, the session says saving waits,
and once the lock is let go everything is written, in order, and no turn is left open. A quit
that the lock outlasts exports what is not written to a file whose path the gateway gives. A
store that fails for good says so once, with that file.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from agent.provider.client import ProviderConfig
from agent.store import SqliteStore
from agent.store.sqlite.connections import path_lock
from contract.events import MessageDelta, StoreFailed, StoreWaiting
from contract.results import ShutdownReport
from demo_model.server import DemoModelServer
from tests.support import EventLog, cut_short, locked, poll_until, release, running_demo
from tui_gateway.gateway import Gateway, GatewayConfig


def waiting_is(log: EventLog, waiting: bool, count: int = 1) -> bool:
    """Wait until ``count`` ``session.store_waiting`` events with ``waiting`` arrived."""
    return log.wait_for(
        lambda _e: sum(w.waiting is waiting for w in log.of_type(StoreWaiting)) >= count, 30
    )


def open_gateway(
    provider: ProviderConfig, db: Path, tmp_path: Path, **config: float
) -> tuple[Gateway, EventLog, SqliteStore]:
    """A gateway on ``db`` whose store gives up waiting for a lock after 0.2 s."""
    store = SqliteStore(db, busy_timeout_s=0.2)
    unsaved = tmp_path / "unsaved"
    gateway = Gateway(
        GatewayConfig(provider=provider, cwd=tmp_path, unsaved_dir=unsaved, **config),
        store=store,
    )
    log = EventLog()
    gateway.subscribe(log)
    return gateway, log, store


def test_a_lock_held_far_past_the_busy_timeout_delays_the_writes_and_loses_none(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    db = tmp_path / "desk.db"
    gateway, log, _store = open_gateway(provider, db, tmp_path)
    try:
        session = gateway.session_create()
        first = gateway.prompt_submit(session, "reply with exactly: saved at once").turn_id
        assert log.complete(first).text == "saved at once"
        with locked(db) as locker:
            demo_server.configure(tokens_per_second=100.0)
            turn = gateway.prompt_submit(session, "a reply while the database is locked").turn_id
            assert waiting_is(log, True)
            done = log.complete(turn, timeout=30)  # shown, though not saved yet
            later = gateway.prompt_submit(session, "reply with exactly: and one more").turn_id
            assert log.complete(later, timeout=30).text == "and one more"
            with SqliteStore(db, recover=False) as reader:  # WAL: readers still read
                row = reader.turns.get_turn(turn)
                assert row is None or row.is_open  # nothing of it is written yet
            assert gateway.session_summaries()  # the gateway answers meanwhile
            release(locker)
            assert waiting_is(log, False)
        assert log.of_type(StoreFailed) == []
        in_memory = gateway.history(session)
    finally:
        report = gateway.shutdown(timeout_s=5)
    assert report.threads_left == [] and report.unsaved == []
    with SqliteStore(db) as check:
        assert [t.status for t in check.turns.list_turns(session)] == ["completed"] * 3
        assert check.turns.open_turns() == []
        assert check.transcript.load_history(session) == in_memory
        assert in_memory[-3].content == done.text


def test_a_quit_the_lock_outlasts_exports_what_was_not_saved(
    provider: ProviderConfig, tmp_path: Path
) -> None:
    db = tmp_path / "desk.db"
    gateway, log, _store = open_gateway(provider, db, tmp_path, store_wait_s=0.5)
    session = gateway.session_create()
    first = gateway.prompt_submit(session, "reply with exactly: saved").turn_id
    log.complete(first)
    with locked(db):
        turn = gateway.prompt_submit(session, "reply with exactly: kept in the file").turn_id
        assert log.complete(turn, timeout=30).text == "kept in the file"
        report = gateway.shutdown(timeout_s=5)
        assert report.threads_left == []
        (path,) = report.unsaved
        (failed,) = log.of_type(StoreFailed)
        assert failed.unsaved == path and path in failed.message
    records = [json.loads(line) for line in Path(path).read_text().splitlines()]
    texts = [m["content"] for r in records for m in r["messages"]]
    assert texts == ["reply with exactly: kept in the file", "kept in the file"]
    assert {r["session_id"] for r in records} == {session}
    assert records[-1]["exit_reason"] == "completed"
    assert (Path(path).stat().st_mode & 0o777) == 0o600
    with SqliteStore(db) as check:  # the lock is gone: the file has what was written before
        assert [t.id for t in check.turns.list_turns(session)] == [first]
        assert check.turns.open_turns() == [] and check.queue.queued_prompts() == []


def test_a_store_that_fails_for_good_says_so_once_with_the_file(
    provider: ProviderConfig, tmp_path: Path
) -> None:
    db = tmp_path / "desk.db"
    gateway, log, store = open_gateway(provider, db, tmp_path)
    try:
        session = gateway.session_create()
        store.close()  # every write from now on fails, and will not pass
        for n in range(2):
            turn = gateway.prompt_submit(session, f"reply with exactly: still here {n}").turn_id
            assert log.complete(turn).text == f"still here {n}"
        (failed,) = log.of_type(StoreFailed)
        assert "kept in memory only" in failed.message and failed.unsaved in failed.message
        assert "\n" not in failed.message
        assert [m.content for m in gateway.history(session)][-1] == "still here 1"
    finally:
        report = gateway.shutdown(timeout_s=5)
    assert report.threads_left == [] and report.unsaved == [failed.unsaved]
    lines = Path(failed.unsaved).read_text().splitlines()
    texts = [m["content"] for r in map(json.loads, lines) for m in r["messages"]]
    asked = ("reply with exactly: ", "")
    assert texts == [f"{kind}still here {n}" for n in range(2) for kind in asked]


def test_a_quit_while_the_database_is_locked_stops_the_stream_before_it_waits(
    tmp_path: Path,
) -> None:
    """The quit is a system stop first: the stream's connection is closed while another
    program still holds the database (as a stop key does), and the stopped turn is booked as
    the shutdown's once the lock is let go."""
    db = tmp_path / "desk.db"
    store = SqliteStore(db, busy_timeout_s=30.0)  # a write waits for the lock, not the quit
    with running_demo(20.0, reply_shape="paragraph", max_tokens=4000) as server:
        provider = ProviderConfig(base_url=server.base_url, model=server.config.model)
        gateway = Gateway(
            GatewayConfig(provider=provider, cwd=tmp_path, unsaved_dir=tmp_path / "unsaved"),
            store=store,
        )
        log = EventLog()
        gateway.subscribe(log)
        session = gateway.session_create()
        turn = gateway.prompt_submit(session, "a long reply").turn_id
        assert log.wait_for(lambda ev: any(isinstance(e.payload, MessageDelta) for e in ev))
        reports: list[ShutdownReport] = []
        quit_ = threading.Thread(target=lambda: reports.append(gateway.shutdown(timeout_s=5)))
        with locked(db) as locker:
            # the reply's draft waits for the lock inside desk's writer
            assert poll_until(lambda: path_lock(os.path.realpath(db)).locked())
            quit_.start()
            record = cut_short(server)  # while the other program still holds the lock
            assert locker.poll() is None
            release(locker)
            quit_.join(30)
    assert not quit_.is_alive()
    (report,) = reports
    assert report.threads_left == [] and report.unsaved == []
    with SqliteStore(db) as check:
        row = check.turns.get_turn(turn)
        assert row is not None and row.exit_reason == "interrupted_by_system(gateway.shutdown)"
        reply = check.transcript.active_messages(session)[-1]
        assert reply.role == "assistant" and reply.partial and reply.content
        assert record.tokens_generated > 0
