"""Keys through a real pseudo-terminal: Esc typed right behind Enter stops that prompt.

The terminal sends "prompt, Enter, Esc" in one write (a fast typist, or a paste): the input
thread reads the Esc before the UI has even handled the Enter, so nothing runs yet. The Esc
must still stop the prompt that Enter sent, not be lost.
"""

from __future__ import annotations

import sys

import pytest

from demo_model.server import DemoModelServer
from tests.desk.test_pty_stop import desk_in_pty, pty_server  # noqa: F401 (a fixture)

pytestmark = [
    pytest.mark.pty,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux pty driver test"),
]


def test_esc_typed_right_after_enter_stops_that_prompt(
    pty_server: DemoModelServer,  # noqa: F811
) -> None:
    before = len(pty_server.records.list())
    with desk_in_pty(pty_server) as (proc, screen):
        mark = screen.size
        screen.write(b"Tell me about stopping streams\r\x1b")
        screen.wait_for(b"stopped by you", timeout_s=10.0, start=mark)
        screen.write(b"\x11")  # Ctrl+Q
        assert proc.wait(timeout=10.0) == 0
    records = [r for r in pty_server.records.list() if r.id > before]
    assert all(r.outcome != "completed" for r in records)  # never a reply that ran to its end
