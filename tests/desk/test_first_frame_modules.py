"""What the real ``desk`` imports before its app's first frame: not the gateway, the agent's
runtime, the HTTP client, Markdown or syntax highlighting.

Each of those costs CPU the frame would wait for on a busy machine; the gateway is built once
the frame is painted (:mod:`desk.late_gateway`), the rest load with the first session, reply or
request. Python's ``-X importtime`` lines (``PYTHONPROFILEIMPORTTIME=1``) go to the terminal as
each module is imported, so the ones read before the status bar's ``○ idle`` is painted are
the modules the frame waited for (as ``bench/first_frame_imports.py`` counts them).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from demo_model.config import DemoConfig
from demo_model.server import DemoModelServer
from tests.desk.test_pty_startup import desk_started

pytestmark = [
    pytest.mark.pty,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux pty test"),
]

IMPORTED = re.compile(rb"import time:\s+\d+ \|\s+\d+ \| *([\w.]+)")

NOT_BEFORE_THE_FRAME = (
    "tui_gateway.gateway",
    "tui_gateway.assembly",
    "agent.agent",
    "agent.tools.registry",
    "agent.store.sqlite",
    "agent.store.opener",
    "httpx",
    "markdown_it",
    "rich.markdown",
    "pygments",
)
"""Modules (and their submodules) the first frame does not wait for."""


def among(names: set[str], wanted: tuple[str, ...]) -> set[str]:
    return {n for n in names if any(n == w or n.startswith(w + ".") for w in wanted)}


def test_the_first_frame_waits_for_no_gateway_agent_or_markdown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPROFILEIMPORTTIME", "1")
    with DemoModelServer(DemoConfig(tokens_per_second=0)) as server:
        args = ["--base-url", server.base_url, "--model", "demo"]
        with desk_started(args, tmp_path) as (proc, screen, _tty):
            frame = screen.wait_for("○ idle".encode(), timeout_s=30.0)
            before = {m.group(1).decode() for m in IMPORTED.finditer(screen.since(0)[:frame])}
            # the session is up once the gateway is built: the modules above were loaded then
            screen.write(b"reply with exactly: up\r")
            assert server.records.wait_for_record(lambda r: r.finished, 30.0) is not None
            after = {m.group(1).decode() for m in IMPORTED.finditer(screen.since(frame))}
            screen.write(b"\x11")  # Ctrl+Q
            assert proc.wait(timeout=30.0) == 0
    assert "textual.app" in before and "desk.app" in before  # the lines were read
    assert among(before, NOT_BEFORE_THE_FRAME) == set()
    assert {"tui_gateway.gateway", "agent.agent", "httpx"} <= after
