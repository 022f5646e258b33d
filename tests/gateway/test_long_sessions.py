"""A gateway that runs for days does not keep every turn it ever ran: a session keeps its last
ended turns, the saving keeps the last closed turn ids, and what they were is in the store
(the memory a long soak measures: ``bench/soak.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.provider.client import ProviderConfig
from agent.store import SqliteStore
from tests.support import EventLog
from tui_gateway.gateway import Gateway, GatewayConfig
from tui_gateway.sessions import persistence, state

KEPT = 3
TURNS = 10


def run_turns(gateway: Gateway, log: EventLog, session: str) -> list[str]:
    ids = []
    for n in range(TURNS):
        turn_id = gateway.prompt_submit(session, f"reply with exactly: answer {n}").turn_id
        assert log.complete(turn_id, timeout=30).exit_reason == "completed"
        ids.append(turn_id)
    return ids


def test_a_session_keeps_its_last_ended_turns_and_the_store_has_them_all(
    provider: ProviderConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(state, "DONE_TURNS_KEPT", KEPT)
    store = SqliteStore(tmp_path / "desk.db")
    gateway = Gateway(GatewayConfig(provider=provider, cwd=tmp_path), store=store)
    log = EventLog()
    gateway.subscribe(log)
    try:
        session = gateway.session_create()
        ids = run_turns(gateway, log, session)
        for turn_id in ids[-KEPT:]:
            assert gateway.turn(session, turn_id).result is not None
        for turn_id in ids[:-KEPT]:
            with pytest.raises(KeyError):
                gateway.turn(session, turn_id)
            assert gateway.turn_session(turn_id) == session  # found in the store
        saved = {t.id: t.exit_reason for t in store.turns.list_turns(session)}
        assert saved == {turn_id: "completed" for turn_id in ids}
        assert len(gateway.history(session)) == 2 * TURNS
    finally:
        assert gateway.shutdown(timeout_s=10).threads_left == []


def test_the_saving_remembers_only_the_last_closed_turns(
    provider: ProviderConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(persistence, "CLOSED_KEPT", KEPT)
    store = SqliteStore(tmp_path / "desk.db")
    gateway = Gateway(GatewayConfig(provider=provider, cwd=tmp_path), store=store)
    log = EventLog()
    gateway.subscribe(log)
    try:
        session = gateway.session_create()
        ids = run_turns(gateway, log, session)
        closed = gateway._persistence._closed_turns
        assert list(closed) == ids[-KEPT:]
        saved = {t.id: t.exit_reason for t in store.turns.list_turns(session)}
        assert saved == {turn_id: "completed" for turn_id in ids}
    finally:
        assert gateway.shutdown(timeout_s=10).threads_left == []
