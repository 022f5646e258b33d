"""The sessions sidebar through a real pseudo-terminal: a title typed in one write right behind
Ctrl+R renames the session (nothing goes to the model), and a word typed with the sidebar open
lands whole in the prompt box."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from agent.store import SqliteStore
from demo_model.server import DemoModelServer
from tests.desk.saved_sessions_kit import NEWER_ID, build_store
from tests.desk.test_pty_stop import (  # noqa: F401 (a fixture)
    desk_in_pty,
    pty_server,
)
from tests.support import poll_until

pytestmark = [
    pytest.mark.pty,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux pty driver test"),
]


def title_in(db: Path, session_id: str) -> str:
    """The title the database holds for ``session_id``."""
    with SqliteStore(db) as store:
        row = store.sessions.get_session(session_id)
    return row.title if row is not None else ""


def test_a_title_typed_behind_ctrl_r_renames_and_a_word_reaches_the_box(
    pty_server: DemoModelServer,  # noqa: F811
    tmp_path: Path,
) -> None:
    db = tmp_path / "desk.db"
    build_store(db)
    before = len(pty_server.records.list())
    args = ["--db", str(db), "--resume", NEWER_ID]
    with desk_in_pty(pty_server, extra_args=args) as (proc, screen):
        mark = screen.size
        screen.write(b"\x02")  # Ctrl+B
        mark = screen.wait_for(b"Plan the release", timeout_s=10.0, start=mark)
        screen.write(b"\x12title two\r")  # Ctrl+R, the title, Enter: one write
        assert poll_until(lambda: title_in(db, NEWER_ID) == "title two", timeout=10.0)
        mark = screen.wait_for(b"title two", timeout_s=10.0, start=mark)
        screen.write(b"draw red")
        screen.wait_for(b"draw red", timeout_s=10.0, start=mark)
        screen.write(b"\x11")  # Ctrl+Q
        assert proc.wait(timeout=10.0) == 0
    assert len(pty_server.records.list()) == before  # nothing went to the model
