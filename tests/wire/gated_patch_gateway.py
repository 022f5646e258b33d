"""``python -m tests.wire.gated_patch_gateway gateway --stdio ...``: the real stdio gateway, in
which apply_patch, once it has written the first file of a patch, waits until the test opens
the FIFO named by ``DESK_TEST_GATE`` (after creating the file ``DESK_TEST_FIRST_WRITTEN``), so a
stop can land between two files of a patch at a known moment."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from agent.tools import edits
from agent.tools.base import ToolResult
from agent.tools.changes import FileChange
from tui_gateway.wire.__main__ import main


def hold_after_the_first_file() -> None:
    """Make :func:`agent.tools.edits.write_change` wait at the gate after its first file."""
    marker = Path(os.environ["DESK_TEST_FIRST_WRITTEN"])
    gate = os.environ["DESK_TEST_GATE"]
    original = edits.write_change
    written: list[FileChange] = []

    def gated(change: FileChange) -> ToolResult:
        result = original(change)
        written.append(change)
        if len(written) == 1:
            marker.write_text("written\n")
            with open(gate, "rb") as handle:  # blocks until the test opens it for writing
                handle.read()
        return result

    edits.write_change = gated


if __name__ == "__main__":
    hold_after_the_first_file()
    sys.exit(main())
