"""What a write_file approval says will change: the diff against the file on disk, a new file's
first lines, and the size of the change, read on the gateway's side."""

from __future__ import annotations

import json
from pathlib import Path

from agent.provider.client import ProviderConfig
from contract.events import ApprovalRequest
from demo_model.server import DemoModelServer
from tests.support import EventLog
from tui_gateway.gateway import Gateway, GatewayConfig
from tui_gateway.turns.approval_preview import (
    DIFF_LINES,
    NEW_FILE_LINES,
    change_preview,
    write_preview,
)


def test_an_existing_file_gets_a_unified_diff_with_its_size(tmp_path: Path) -> None:
    path = tmp_path / "notes.md"
    path.write_text("one\ntwo\nthree\n")
    preview = write_preview(path, "one\n2\nthree\nfour\n")
    assert preview.kind == "diff"
    assert preview.text.splitlines()[:2] == ["--- a/notes.md", "+++ b/notes.md"]
    assert "-two" in preview.text and "+2" in preview.text and "+four" in preview.text
    assert preview.note == "+2 −1 lines · 14 → 17 bytes"


def test_a_new_file_shows_its_first_lines(tmp_path: Path) -> None:
    content = "".join(f"line {n}\n" for n in range(100))
    preview = write_preview(tmp_path / "new.py", content)
    assert preview.kind == "new_file"
    assert preview.text.splitlines() == [f"line {n}" for n in range(NEW_FILE_LINES)]
    assert preview.note == f"new file · 100 lines (first {NEW_FILE_LINES} shown) · 790 bytes"


def test_no_change_binary_and_long_diffs_say_so(tmp_path: Path) -> None:
    same = tmp_path / "same.txt"
    same.write_text("x\n")
    assert write_preview(same, "x\n").note.startswith("no change")
    binary = tmp_path / "blob.bin"
    binary.write_bytes(b"\x00\x01\x02")
    preview = write_preview(binary, "text")
    assert preview.kind == "" and preview.note == "replaces a binary file of 3 bytes"
    long = tmp_path / "long.txt"
    long.write_text("".join(f"{n}\n" for n in range(3000)))
    preview = write_preview(long, "")
    assert len(preview.text.splitlines()) == DIFF_LINES
    assert preview.note.endswith(f"diff cut at {DIFF_LINES:,} of 3,003 lines")
    assert change_preview("shell", {"command": "ls"}).kind == ""


def test_the_approval_request_carries_the_diff(
    demo_server: DemoModelServer, tmp_path: Path
) -> None:
    (tmp_path / "plan.txt").write_text("keep\nold line\n")
    provider = ProviderConfig(base_url=demo_server.base_url, model=demo_server.config.model)
    gateway = Gateway(GatewayConfig(provider=provider, cwd=tmp_path, approvals=True))
    log = EventLog()
    gateway.subscribe(log)
    try:
        session = gateway.session_create()
        args = {"path": "plan.txt", "content": "keep\nnew line\n"}
        gateway.prompt_submit(session, "call tool write_file with " + json.dumps(args))
        log.wait_for(lambda events: any(isinstance(e.payload, ApprovalRequest) for e in events))
        (request,) = log.of_type(ApprovalRequest)
        assert request.preview_kind == "diff"
        assert "-old line" in request.preview and "+new line" in request.preview
        assert request.preview_note == "+1 −1 lines · 14 → 14 bytes"
        gateway.approval_respond(session, request.request_id, "deny")
    finally:
        assert gateway.shutdown(timeout_s=5.0).threads_left == []
    assert (tmp_path / "plan.txt").read_text() == "keep\nold line\n"  # denied: not written
