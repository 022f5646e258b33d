"""The prompt history outlives the desk: Up in a later run recalls what an earlier one sent."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from demo_model.server import DemoModelServer
from tests.desk.test_pty_stop import (  # noqa: F401 (a fixture)
    desk_in_pty,
    pty_server,
)

pytestmark = [
    pytest.mark.pty,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux pty driver test"),
]


def test_up_after_a_restart_recalls_the_last_run_s_prompt_and_the_hint_names_the_db(
    pty_server: DemoModelServer,  # noqa: F811
    tmp_path: Path,
) -> None:
    args = ["--db", str(tmp_path / "desk.db")]
    with desk_in_pty(pty_server, extra_args=args) as (proc, screen):
        mark = screen.size
        screen.write(b"reply with exactly: zebra crossing\r")
        screen.wait_for(b"zebra crossing", timeout_s=20.0, start=mark)
        screen.wait_for(b"idle", timeout_s=20.0, start=screen.size)
        mark = screen.size
        screen.write(b"\x11")  # Ctrl+Q
        assert proc.wait(timeout=20.0) == 0
        # the way back names the database too: without it, no saved session was found
        hint = f"to resume this session: desk --db {args[1]} --resume ".encode()
        screen.wait_for(hint, timeout_s=10.0, start=mark)
    with desk_in_pty(pty_server, extra_args=args) as (proc, screen):
        mark = screen.size  # a new session: nothing of the last run on screen
        screen.write(b"\x1b[A")  # Up
        screen.wait_for(b"reply with exactly: zebra crossing", timeout_s=20.0, start=mark)
        screen.write(b"\x11")
        assert proc.wait(timeout=20.0) == 0
