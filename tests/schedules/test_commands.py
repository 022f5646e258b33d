"""``desk schedule run NAME`` runs one firing by hand, ``desk schedule list`` shows the next
and last runs with their outcome, and ``desk serve`` runs the schedules: SIGTERM mid-firing
books ``gateway.shutdown`` and leaves no process."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import psutil
import pytest

from agent.provider.client import ProviderConfig
from agent.store import SqliteStore
from demo_model.server import DemoModelServer
from tests.support import cut_short, poll_until
from tests.wire.kit import Child, wire_cmd
from tui_gateway.wire.schedule_cli import main_schedule

CONFIG = """\
[schedules.tick]
every = "{every}"
prompt = "say hi"
"""


def write_config(every: str) -> None:
    folder = Path(os.environ["XDG_CONFIG_HOME"]) / "desk"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.toml").write_text(CONFIG.format(every=every), encoding="utf-8")


def test_run_by_hand_then_list_shows_the_last_run_and_its_outcome(
    provider: ProviderConfig, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_config("1d")
    db = str(tmp_path / "desk.db")
    server = ["--base-url", provider.base_url, "--model", provider.model, "--db", db]
    assert main_schedule(["list", "--db", db]) == 0
    listed = capsys.readouterr().out
    assert "tick" in listed and "every 86400 s" in listed and "never" in listed
    assert main_schedule(["run", "tick", *server]) == 0
    assert capsys.readouterr().out.strip().endswith("tick: completed")
    assert main_schedule(["list", "--db", db]) == 0
    (line,) = [x for x in capsys.readouterr().out.splitlines() if x.startswith("tick")]
    assert line.endswith("completed") and "never" not in line
    with SqliteStore(db, recover=False) as store:
        session_id = store.firings.schedule_session("tick")
        assert session_id is not None
        session = store.sessions.get_session(session_id)
        assert session is not None and session.title == "tick"


def test_an_unknown_schedule_or_a_bad_table_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_config("1d")
    assert main_schedule(["run", "nope", "--db", str(tmp_path / "d.db")]) == 2
    assert "no schedule 'nope' (tick)" in capsys.readouterr().err
    write_config("soon")
    assert main_schedule(["list"]) == 2
    err = capsys.readouterr().err.strip()
    assert "schedules.tick.every must be" in err and "\n" not in err


def test_desk_serve_fires_and_its_sigterm_mid_firing_books_gateway_shutdown(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    write_config("1s")
    demo_server.configure(tokens_per_second=5.0)
    db = tmp_path / "desk.db"
    token = tmp_path / "token"
    child = Child(
        wire_cmd("serve", provider, "--port", "0", "--token-file", str(token), "--db", str(db))
    )
    try:
        assert child.out.wait_for(lambda d: b"listening on" in d, 30.0), child.err.text
        assert poll_until(lambda: db.exists())
        with SqliteStore(db, recover=False) as store:
            assert poll_until(lambda: bool(store.turns.open_turns()), 30), child.err.text
            (turn,) = store.turns.open_turns()
        assert demo_server.records.wait_for(lambda records: bool(records), 10)
        family = psutil.Process(child.proc.pid).children(recursive=True)
        child.proc.send_signal(signal.SIGTERM)
        assert child.wait(30) == 0, child.err.text
        cut_short(demo_server)
        assert not [p for p in family if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        with SqliteStore(db, recover=False) as store:
            row = store.turns.get_turn(turn.id)
            assert row is not None and (row.exit_reason, row.stop_surface) == (
                "interrupted_by_system(gateway.shutdown)",
                "gateway.shutdown",
            )
            firings = store.firings.last_firings("tick", limit=10)
            assert [f.outcome for f in firings if f.turn_id == turn.id] == [
                "interrupted_by_system(gateway.shutdown)"
            ]
            assert all(f.outcome is not None for f in firings)
    finally:
        child.kill()
