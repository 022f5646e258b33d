"""Through a real pseudo-terminal: a reply and a tool output full of escape sequences never
command the terminal (no title set, no alternate-screen leave, no mouse tracking, no reset).

desk runs in a pty (see :mod:`tests.desk.test_pty_stop`) in a folder holding a file whose one
line is hostile; the demo model reads it with ``read_file`` (inside the workspace: no approval)
and then quotes that line in its reply. Every byte desk wrote to the terminal after it was ready
is searched for the sequences.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from demo_model.server import DemoModelServer
from tests.desk.test_pty_stop import desk_in_pty
from tests.support import running_demo

pytestmark = [
    pytest.mark.pty,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux pty driver test"),
]

HOSTILE = (
    "\x1b]0;owned-title\x07\x1b]2;owned-title\x1b\\"
    "\x1b[?1049l\x1b[?1000h\x1b[?1003h\x1b[?1006h"
    "\x1b[2J\x1bc\x1b]52;c;b3duZWQ=\x07"
    "\x9b?1049l\x9d0;c1-title\x9c"
    "\x1b]8;;http://evil.example\x1b\\click\x1b]8;;\x1b\\ hostile-end"
)
NEVER = {
    "a window title": b"\x1b]0;owned",
    "a window title (OSC 2)": b"\x1b]2;owned",
    "a clipboard write": b"\x1b]52;",
    "a link": b"\x1b]8;;http://evil",
    "a terminal reset": b"\x1bc",
    "the one-character CSI": "\x9b".encode(),
    "the one-character OSC": "\x9d".encode(),
    "the alternate screen left": b"\x1b[?1049l",
    "mouse tracking": b"\x1b[?1000h",
    "any-motion mouse tracking": b"\x1b[?1003h",
}


@pytest.fixture
def pty_server() -> Iterator[DemoModelServer]:
    with running_demo(200) as server:
        yield server


def test_a_hostile_reply_and_tool_output_never_command_the_terminal(
    pty_server: DemoModelServer, tmp_path: Path
) -> None:
    (tmp_path / "hostile.txt").write_text(HOSTILE + "\nsecond line\n")
    args = ("--db", str(tmp_path / "desk.db"))
    with desk_in_pty(pty_server, cwd=tmp_path, extra_args=args) as (proc, screen):
        ready = screen.size  # desk's own set-up (alternate screen, mouse) came before this
        prompt = "call tool read_file with " + json.dumps({"path": "hostile.txt"})
        screen.write(prompt.encode() + b"\r")
        screen.wait_for(b"That is what the tool reported", timeout_s=30.0, start=ready)
        screen.wait_for(b"idle", timeout_s=10.0, start=ready)
        written = screen.since(ready)
        screen.write(b"\x11")  # Ctrl+Q
        assert proc.wait(timeout=10.0) == 0
    for what, sequence in NEVER.items():
        assert sequence not in written, f"the terminal received {what}: {sequence!r}"
    assert b"hostile-end" in written and "␛]0;owned-title".encode() in written
