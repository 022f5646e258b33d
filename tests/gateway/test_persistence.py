"""The gateway saves what the person saw: prompts, replies (partial ones flagged), turn
outcomes with their stops (a store that fails: see test_store_faults)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.provider.client import ProviderConfig
from agent.stops import StopRequest, Surface
from agent.store import SqliteStore
from contract.errors import GatewayError
from contract.events import MessageDelta
from demo_model.server import DemoModelServer
from tests.support import EventLog
from tui_gateway.gateway import Gateway, GatewayConfig


def open_gateway(provider: ProviderConfig, db: Path) -> tuple[Gateway, EventLog, SqliteStore]:
    store = SqliteStore(db)
    gateway = Gateway(GatewayConfig(provider=provider, cwd=db.parent), store=store)
    log = EventLog()
    gateway.subscribe(log)
    return gateway, log, store


def test_turns_are_saved_and_a_session_resumes_in_a_new_gateway(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    db = tmp_path / "desk.db"
    gateway, log, store = open_gateway(provider, db)
    session = gateway.session_create()
    done = log.complete(gateway.prompt_submit(session, "reply with exactly: first answer").turn_id)
    demo_server.configure(tokens_per_second=40.0)
    second = gateway.prompt_submit(session, "now a long one").turn_id
    assert log.wait_for(
        lambda _e: any(
            isinstance(e.payload, MessageDelta) and e.payload.turn_id == second for e in _e
        )
    )
    gateway.session_interrupt(session, StopRequest.by_user(Surface.DESK_KEY))
    stopped = log.complete(second)
    in_memory = gateway.history(session)
    assert store.transcript.load_history(session) == in_memory  # saved before it was shown
    turns = {t.id: t for t in store.turns.list_turns(session)}
    assert turns[done.turn_id].exit_reason == "completed"
    row = turns[second]
    assert row.exit_reason == "interrupted_by_user"
    assert row.stop_issuer == "user" and row.stop_surface == "desk.key"
    assert row.stop_closed_ms is not None
    assert gateway.shutdown(timeout_s=5).threads_left == []

    demo_server.configure(tokens_per_second=2000.0)
    again, log2, _store = open_gateway(provider, db)
    try:
        listed = again.session_list()
        assert [i.session_id for i in listed] == [session]
        assert listed[0].title == "reply with exactly: first answer"
        resumed = again.session_resume()  # the most recent
        assert resumed.session_id == session
        assert [e.role for e in resumed.transcript] == ["user", "assistant", "user", "assistant"]
        assert resumed.transcript[1].content == "first answer"
        assert resumed.transcript[3].partial and resumed.transcript[3].content == stopped.text
        assert resumed.transcript[3].note == "stopped by you"
        assert resumed.transcript[1].note == ""
        third = again.prompt_submit(session, "reply with exactly: resumed fine").turn_id
        assert log2.complete(third).text == "resumed fine"
        sent = demo_server.records.last().messages
        assert [m["role"] for m in sent] == ["user", "assistant", "user", "assistant", "user"]
        again.session_rename(session, "  renamed   session ")
        assert again.session_list()[0].title == "renamed session"
        assert again.session_delete(session)
        assert again.session_list() == []
    finally:
        assert again.shutdown(timeout_s=5).threads_left == []


def test_quitting_mid_stream_is_saved_as_a_system_stop(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    demo_server.configure(tokens_per_second=40.0)
    gateway, log, _store = open_gateway(provider, tmp_path / "desk.db")
    session = gateway.session_create()
    turn = gateway.prompt_submit(session, "stream a while").turn_id
    assert log.wait_for(lambda ev: any(isinstance(e.payload, MessageDelta) for e in ev))
    assert gateway.shutdown(timeout_s=5).threads_left == []
    check = SqliteStore(tmp_path / "desk.db")
    try:
        row = check.turns.get_turn(turn)
        assert row is not None
        assert row.exit_reason == "interrupted_by_system(gateway.shutdown)"
        assert row.stop_issuer == "system"
        history = check.transcript.active_messages(session)
        assert history[-1].role == "assistant" and history[-1].partial
        assert check.integrity_check() == "ok"
    finally:
        check.close()


def test_without_a_store_a_live_session_resumes_with_what_memory_holds(
    provider: ProviderConfig,
) -> None:
    gateway = Gateway(GatewayConfig(provider=provider))
    log = EventLog()
    gateway.subscribe(log)
    try:
        session = gateway.session_create()
        log.complete(gateway.prompt_submit(session, "reply with exactly: kept").turn_id)
        gateway.session_create()  # switch away, then back
        resumed = gateway.session_resume(session)
        assert [(e.role, e.content) for e in resumed.transcript] == [
            ("user", "reply with exactly: kept"),
            ("assistant", "kept"),
        ]
    finally:
        assert gateway.shutdown(timeout_s=5).threads_left == []


def test_a_session_saved_without_a_model_remembers_the_one_its_turns_ran_with(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    db = tmp_path / "desk.db"
    with SqliteStore(db) as old:  # saved before the server named its model
        old.sessions.create_session("old", title="before the model")
    gateway, log, store = open_gateway(provider, db)
    try:
        assert gateway.session_list()[0].model == ""
        gateway.session_resume("old")
        turn = gateway.prompt_submit("old", "reply with exactly: hi").turn_id
        assert log.complete(turn).text == "hi"
    finally:
        assert gateway.shutdown(timeout_s=5).threads_left == []
    again, _log, check = open_gateway(provider, db)
    try:
        row = check.turns.get_turn(turn)
        assert row is not None and row.model == provider.model == "demo"
        assert again.session_list()[0].model == "demo"  # the saved sessions' list names it
        assert again.session_resume("old").model == "demo"  # and a resume goes on with it
    finally:
        assert again.shutdown(timeout_s=5).threads_left == []


def test_a_session_resumes_by_the_start_of_its_id_and_an_ambiguous_start_is_refused(
    provider: ProviderConfig, tmp_path: Path
) -> None:
    # The tester's `--resume 3f2a9c1e` (the id as the sessions list shows it) said "no saved
    # session ... this is a new session"
    db = tmp_path / "desk.db"
    with SqliteStore(db) as old:
        ids = [old.sessions.create_session(f"ab{tail}", title=tail).id for tail in ("12", "19")]
        old.sessions.create_session("cd34", title="only")
    gateway, _log, store = open_gateway(provider, db)
    try:
        assert gateway.session_resume("cd").session_id == "cd34"
        assert gateway.session_resume("ab12").session_id == "ab12"  # a whole id wins
        with pytest.raises(GatewayError, match="more than one"):
            gateway.session_resume("ab1")
        with pytest.raises(GatewayError, match="no saved session 'zz'"):
            gateway.session_resume("zz")
        assert store.sessions.ids_starting_with("ab", limit=5) == ids
        assert store.sessions.ids_starting_with("a%") == []  # no pattern: the start as typed
    finally:
        assert gateway.shutdown(timeout_s=5).threads_left == []
        store.close()
