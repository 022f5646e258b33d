"""Esc while an approval waits, through a real pseudo-terminal: Esc and what is typed after it
reach desk in one read (a busy machine, ssh, tmux), and Esc is still a stop.

A terminal sends Alt+y as ESC y, so ESC and ``y`` in one read once answered "allow once" and
ran the tool the person meant to stop; and the ``a`` of "all good" typed right after Esc was
often taken as "allow always" (the screen had not yet heard that the stop resolved the
approval), so the prompt box got "ll good". Each test writes ESC and the words in one write,
then Enter: the model server must get the words, whole, as the next prompt, the tool must not
have run, and the stop must be booked to the person.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agent.store import SqliteStore
from demo_model.server import DemoModelServer
from desk.approval_keys import ANSWER_PAUSE_S
from tests.desk.test_pty_stop import (  # noqa: F401 (a fixture)
    PtyScreen,
    desk_in_pty,
    pty_server,
)
from tests.support import poll_until

pytestmark = [
    pytest.mark.pty,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux pty driver test"),
]


def wait_for_an_armed_approval(screen: PtyScreen, marker: Path) -> None:
    """Ask for a shell call that would create ``marker``; return once the card is on screen
    and a plain y / a / n could answer it (the pause since it appeared passed)."""
    command = "call tool shell with " + json.dumps({"command": f"touch {marker}"})
    screen.write(command.encode() + b"\r")
    screen.wait_for(b"Allow shell", timeout_s=30.0)
    armed = time.monotonic() + ANSWER_PAUSE_S + 0.1  # the card appeared before it was drawn
    assert poll_until(lambda: time.monotonic() > armed, timeout=5.0)


def last_prompt(messages: list[dict[str, Any]]) -> str:
    """The person's last prompt in a request (a stopped prompt with no reply may come before it
    in the same user message: roles alternate)."""
    users = [str(m["content"]) for m in messages if m["role"] == "user"]
    return users[-1].split("\n\n")[-1] if users else ""


def esc_then_typed_stops_and_types(
    server: DemoModelServer, data_home: Path, cwd: Path, typed: bytes
) -> None:
    """ESC and ``typed`` in one write while an approval waits, then Enter: the turn is stopped
    by the person, the tool never ran, and ``typed`` is the next prompt, whole."""
    marker = cwd / "tool-ran"
    before = len(server.records.list())
    with desk_in_pty(server, cwd=cwd) as (proc, screen):
        wait_for_an_armed_approval(screen, marker)
        mark = screen.size
        screen.write(b"\x1b" + typed)  # one write: desk reads it at once
        screen.wait_for(b"stopped by you", timeout_s=10.0, start=mark)
        screen.wait_for(b"idle", timeout_s=10.0, start=mark)
        screen.write(b"\r")  # send what the prompt box holds
        record = server.records.wait_for_record(
            lambda r: r.id > before and last_prompt(r.messages) == typed.decode(), 20.0
        )
        sent = [last_prompt(r.messages) for r in server.records.list() if r.id > before]
        assert record is not None, f"{typed!r} never sent whole; prompts sent: {sent!r}"
        screen.write(b"\x11")  # Ctrl+Q
        assert proc.wait(timeout=15.0) == 0
    assert not marker.exists(), "the tool ran"
    with SqliteStore(data_home / "desk" / "desk.db") as saved:
        (session,) = saved.sessions.list_sessions()
        turns = saved.turns.list_turns(session.id)
    (stopped,) = [t for t in turns if t.prompt.startswith("call tool shell")]
    assert (stopped.stop_issuer, stopped.stop_surface) == ("user", "desk.key")


def test_esc_and_y_in_one_read_during_an_approval_stop_the_turn_and_type_y(
    pty_server: DemoModelServer,  # noqa: F811
    private_xdg_dirs: dict[str, Path],
    tmp_path: Path,
) -> None:
    esc_then_typed_stops_and_types(pty_server, private_xdg_dirs["XDG_DATA_HOME"], tmp_path, b"y")


def test_esc_and_all_good_in_one_read_during_an_approval_stop_and_type_all_good(
    pty_server: DemoModelServer,  # noqa: F811
    private_xdg_dirs: dict[str, Path],
    tmp_path: Path,
) -> None:
    data_home = private_xdg_dirs["XDG_DATA_HOME"]
    esc_then_typed_stops_and_types(pty_server, data_home, tmp_path, b"all good")
