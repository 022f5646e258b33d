"""Nothing a command or an MCP server starts outlives desk, however either of them tries.

Each escape (a ``setsid`` child that ignores SIGTERM, a double-forked daemon, a command that
kills its guard with ``kill -9 $PPID``, an MCP server's ``setsid`` child) runs under a stand-in
for desk in a child interpreter (desk's own shell tool and MCP transport, see
:mod:`tests.tools.escapekit`), which then quits or is killed with SIGKILL. Every escapee and
every process below the stand-in must be gone. ``bench/guard_escapes.py`` runs 100 tries of each.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from agent.tools.process import has_procfs
from tests.tools.escapekit import ESCAPES, try_escape

pytestmark = pytest.mark.skipif(
    not (sys.platform.startswith("linux") and has_procfs()), reason="Linux /proc and pidfds"
)

TRIES = 1


@pytest.mark.parametrize("ending", ["quit", "kill"])
@pytest.mark.parametrize("escape", sorted(ESCAPES))
def test_no_escapee_outlives_desk(escape: str, ending: str, tmp_path: Path) -> None:
    for attempt in range(TRIES):
        folder = tmp_path / str(attempt)
        folder.mkdir()
        left = try_escape(escape, ending, folder)
        assert left == set(), f"{escape} outlived a {ending} of desk (try {attempt + 1}): {left}"
