"""``--resume [ID]`` and ``--db PATH``, and opening the session database the desk's settings
name (the gateway's assembly opens it; the desk only says why it could not)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.store import SqliteStore
from desk.config import parse_options
from desk.startup import unsaved_notice
from tui_gateway.assembly import StoreUnavailable, open_settings_store


def test_resume_and_db_flags() -> None:
    assert parse_options([], {}).resume is False
    options = parse_options(["--resume"], {})
    assert options.resume is True and options.resume_id is None
    options = parse_options(["--resume", "b1b1b1b1b1b1", "--db", "/tmp/x.db"], {})
    assert options.resume and options.resume_id == "b1b1b1b1b1b1"
    assert options.settings.db == "/tmp/x.db"


def test_open_store_at_a_path_and_at_the_default_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = parse_options(["--db", str(tmp_path / "a" / "desk.db")], {}).settings
    store = open_settings_store(settings)
    assert isinstance(store, SqliteStore)
    store.close()
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    settings = parse_options([], {}).settings
    assert settings.db == str(tmp_path / "data" / "desk" / "desk.db")
    assert settings.origin("db").label == "default"
    store = open_settings_store(settings)
    assert isinstance(store, SqliteStore)
    assert Path(store.path) == tmp_path / "data" / "desk" / "desk.db"
    store.close()


def test_a_database_that_is_not_one_is_a_one_line_notice(tmp_path: Path) -> None:
    bad = tmp_path / "not.db"
    bad.write_bytes(b"this is not a sqlite file" * 100)
    with pytest.raises(StoreUnavailable) as info:
        open_settings_store(parse_options(["--db", str(bad)], {}).settings)
    notice = unsaved_notice(info.value.reason)
    assert notice.startswith("sessions are not saved: ") and "\n" not in notice
    assert notice.endswith("this desk keeps them in memory only")
