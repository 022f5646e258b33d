"""Two ``desk serve`` on one PostgreSQL database running the same schedule: the host running a
firing is killed with SIGKILL; its turn is recovered as any crash is (``failed(Crash)``), the
firing is not run again, and the other host goes on with the next firings in the same session."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.provider.client import ProviderConfig
from agent.store import CRASH_EXIT_REASON
from agent.store.postgres import PostgresStore
from demo_model.server import DemoModelServer
from tests.support import poll_until
from tests.wire.kit import Child, wire_cmd

CONFIG = """\
[schedules.tick]
every = "1s"
prompt = "tell me a long story"
"""


@pytest.fixture
def two_serves(provider: ProviderConfig, pg_database: str, tmp_path: Path) -> Iterator[list[Child]]:
    folder = Path(os.environ["XDG_CONFIG_HOME"]) / "desk"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.toml").write_text(CONFIG, encoding="utf-8")
    token = str(tmp_path / "token")
    children: list[Child] = []
    try:
        for _ in range(2):
            argv = wire_cmd("serve", provider, "--port", "0", "--token-file", token)
            child = Child([*argv, "--db", pg_database])
            children.append(child)
            assert child.out.wait_for(lambda d: b"listening on" in d, 60.0), child.err.text
        yield children
    finally:
        for child in children:
            if child.proc.poll() is None:
                child.proc.send_signal(signal.SIGTERM)
                child.wait(30)
            child.kill()


def test_a_host_killed_mid_firing_is_recovered_and_the_other_goes_on(
    two_serves: list[Child], demo_server: DemoModelServer, pg_database: str
) -> None:
    demo_server.configure(tokens_per_second=5.0)  # a firing's turn outlasts many due times
    reader = PostgresStore(pg_database, owner="test-reader:0:0", recover=False)
    try:
        assert poll_until(lambda: _session(reader) is not None, 30)
        session_id = _session(reader)
        assert session_id is not None
        assert poll_until(lambda: any(t.is_open for t in reader.turns.list_turns(session_id)), 30)
        (first,) = [t for t in reader.turns.list_turns(session_id) if t.is_open]
        by_pid = {child.proc.pid: child for child in two_serves}
        killed = next(c for pid, c in by_pid.items() if f":{pid}:" in first.owner)
        survivor = next(c for c in two_serves if c is not killed)
        os.kill(killed.proc.pid, signal.SIGKILL)
        killed.wait(30)
        assert poll_until(
            lambda: reader.turns.get_turn(first.id).exit_reason == CRASH_EXIT_REASON,  # type: ignore[union-attr]
            60,
        )
        mark = f":{survivor.proc.pid}:"
        assert poll_until(
            lambda: any(mark in t.owner for t in reader.turns.list_turns(session_id)), 60
        ), survivor.err.text
        survivor.proc.send_signal(signal.SIGTERM)
        assert survivor.wait(60) == 0, survivor.err.text
        turns = reader.turns.list_turns(session_id)
        firings = reader.firings.last_firings("tick", limit=500)
        started = [f.turn_id for f in firings if f.turn_id is not None]
        assert len(started) == len(set(started))  # each firing its own turn: none ran twice
        assert {t.id for t in turns} <= set(started)  # every turn of the session is a firing's
        assert not [t for t in turns if t.is_open]
        assert reader.turns.get_turn(first.id).exit_reason == CRASH_EXIT_REASON  # type: ignore[union-attr]
        reasons = [t.exit_reason for t in turns]
        assert "interrupted_by_system(gateway.shutdown)" in reasons, reasons
    finally:
        reader.close()


def _session(store: PostgresStore) -> str | None:
    return store.firings.schedule_session("tick")
