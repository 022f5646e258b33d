"""Edits and /undo through ``desk gateway --stdio`` with the demo model's scripted phrases.

An ``edit_file`` and an ``apply_patch`` turn change the workspace after the person's approval
(whose request carries the diff); ``session.undo`` puts the files back byte for byte, one turn at
a time, also in a new gateway process on the same database; a turn stopped between two files of
a patch is undone the same way.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from agent.provider.client import ProviderConfig
from demo_model.server import DemoModelServer
from tests.support import poll_until
from tests.wire.kit import RawStdio, gateway_cmd, wire_cmd

STOP = {"issuer": "user", "surface": "desk.key", "reason": "enough"}

A_TEXT = b"alpha\nbeta\ngamma\n"
B_TEXT = "b \u00e9t\u00e9\n".encode()


def event(raw: RawStdio, kind: str, **match: Any) -> dict[str, Any]:
    """The first event of ``kind`` whose payload has the ``match`` members."""

    def fits(m: dict[str, Any]) -> bool:
        if m.get("method") != "event" or m["params"]["type"] != kind:
            return False
        payload = m["params"]["payload"]
        return all(payload.get(k) == v for k, v in match.items())

    found = raw.wait_message(fits, 30.0)
    seen = [json.dumps(m)[:400] for m in raw.messages()[-6:]]
    assert found is not None, f"no {kind} event with {match}: {seen} {raw.child.err.text}"
    payload: dict[str, Any] = found["params"]["payload"]
    return payload


def tool_turn(raw: RawStdio, session: str, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """Submit a scripted call of ``tool``, allow it once; returns its approval request."""
    text = f"call tool {tool} with {json.dumps(args)}"
    turn = raw.call("prompt.submit", {"session_id": session, "text": text})["result"]["turn_id"]
    asked = event(raw, "approval.request", turn_id=turn)
    answer = {"session_id": session, "request_id": asked["request_id"], "decision": "once"}
    assert raw.call("approval.respond", answer)["result"] == {"accepted": True}
    done = event(raw, "message.complete", turn_id=turn)
    assert done["exit_reason"] == "completed", done
    return asked


def start(provider: ProviderConfig, db: Path, workspace: Path) -> RawStdio:
    return RawStdio(gateway_cmd(provider, "--db", str(db), "--workspace", str(workspace)))


PATCH = (
    "*** Begin Patch\n"
    "*** Update File: a.txt\n@@\n alpha\n-BETA\n+beta two\n"
    "*** Add File: c.txt\n+new file\n"
    "*** Delete File: b.txt\n"
    "*** End Patch"
)


def test_edits_are_undone_byte_for_byte_also_by_a_new_gateway(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "a.txt").write_bytes(A_TEXT)
    (work / "b.txt").write_bytes(B_TEXT)
    db = tmp_path / "desk.db"
    raw = start(provider, db, work)
    try:
        session = raw.call("session.create")["result"]["session_id"]
        edit = {"path": "a.txt", "old": "beta", "new": "BETA"}
        asked = tool_turn(raw, session, "edit_file", edit)
        assert asked["preview_kind"] == "diff"
        assert "-beta\n+BETA" in asked["preview"]
        assert (work / "a.txt").read_bytes() == b"alpha\nBETA\ngamma\n"

        asked = tool_turn(raw, session, "apply_patch", {"patch": PATCH})
        assert asked["preview_note"] == "3 files · +2 −2 lines"
        assert "+++ /dev/null" in asked["preview"] and "--- /dev/null" in asked["preview"]
        assert (work / "a.txt").read_bytes() == b"alpha\nbeta two\ngamma\n"
        assert (work / "c.txt").read_bytes() == b"new file\n"
        assert not (work / "b.txt").exists()

        diff = raw.call("session.diff", {"session_id": session})["result"]
        assert sorted(diff["files"]) == ["a.txt", "b.txt", "c.txt"]
        assert "-beta\n+beta two" in diff["diff"]

        undone = raw.call("session.undo", {"session_id": session})["result"]
        assert undone["undone"] and undone["remaining"] == 1 and undone["not_restored"] == []
        assert sorted(undone["restored"]) == ["a.txt", "b.txt"]  # edited, deleted
        assert undone["removed"] == ["c.txt"]  # the patch added it
        assert "-new file" in undone["diff"] and "+b \u00e9t\u00e9" in undone["diff"]
        assert (work / "a.txt").read_bytes() == b"alpha\nBETA\ngamma\n"
        assert (work / "b.txt").read_bytes() == B_TEXT
        assert not (work / "c.txt").exists()
        raw.call("gateway.shutdown", {"timeout_s": 5})
        raw.child.wait()
    finally:
        raw.child.kill()

    again = start(provider, db, work)  # a new process on the same database
    try:
        assert again.call("session.resume", {"session_id": session})["result"]
        undone = again.call("session.undo", {"session_id": session})["result"]
        assert undone["undone"] and undone["remaining"] == 0 and undone["restored"] == ["a.txt"]
        assert undone["prompt"].startswith("call tool edit_file")
        assert (work / "a.txt").read_bytes() == A_TEXT
        nothing = again.call("session.undo", {"session_id": session})["result"]
        assert nothing["undone"] is False
        assert again.call("session.diff", {"session_id": session})["result"]["files"] == []
    finally:
        again.child.kill()


def test_a_file_changed_outside_desk_since_keeps_its_turn_whole_and_next_to_undo(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "a.txt").write_bytes(A_TEXT)
    (work / "b.txt").write_bytes(B_TEXT)
    raw = start(provider, tmp_path / "desk.db", work)
    try:
        session = raw.call("session.create")["result"]["session_id"]
        tool_turn(raw, session, "edit_file", {"path": "a.txt", "old": "beta", "new": "BETA"})
        tool_turn(raw, session, "apply_patch", {"patch": PATCH})  # a.txt, b.txt and c.txt
        (work / "c.txt").write_bytes(b"the person's own work\n")
        for _ in range(2):  # refused, and again: never the turn before instead
            refused = raw.call("session.undo", {"session_id": session})["result"]
            assert refused["undone"] is False and refused["prompt"].startswith("call tool apply")
            assert refused["not_restored"] == ["c.txt: changed outside desk since the turn"]
            assert refused["restored"] == refused["removed"] == [] and refused["remaining"] == 2
        # nothing of the turn was put back: not its other files either
        assert (work / "a.txt").read_bytes() == b"alpha\nbeta two\ngamma\n"
        assert not (work / "b.txt").exists()
        assert (work / "c.txt").read_bytes() == b"the person's own work\n"
        diff = raw.call("session.diff", {"session_id": session})["result"]
        assert sorted(diff["files"]) == ["a.txt", "b.txt", "c.txt"]

        (work / "c.txt").write_bytes(b"new file\n")  # back as the turn left it
        undone = raw.call("session.undo", {"session_id": session})["result"]
        assert undone["undone"] and undone["remaining"] == 1 and undone["removed"] == ["c.txt"]
        assert (work / "a.txt").read_bytes() == b"alpha\nBETA\ngamma\n"
        assert (work / "b.txt").read_bytes() == B_TEXT
    finally:
        raw.child.kill()


def test_a_turn_stopped_between_two_files_of_a_patch_is_undone(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "a.txt").write_bytes(A_TEXT)
    (work / "b.txt").write_bytes(B_TEXT)
    gate, first = tmp_path / "gate", tmp_path / "first-written"
    os.mkfifo(gate)
    argv = [sys.executable, "-m", "tests.wire.gated_patch_gateway"]
    argv += wire_cmd("gateway", provider, "--stdio", "--db", str(tmp_path / "desk.db"))[3:]
    argv += ["--workspace", str(work)]
    os.environ["DESK_TEST_GATE"], os.environ["DESK_TEST_FIRST_WRITTEN"] = str(gate), str(first)
    try:
        raw = RawStdio(argv)
    finally:
        del os.environ["DESK_TEST_GATE"], os.environ["DESK_TEST_FIRST_WRITTEN"]
    try:
        session = raw.call("session.create")["result"]["session_id"]
        patch = (
            "*** Begin Patch\n*** Update File: a.txt\n@@\n-alpha\n+ALPHA\n"
            "*** Update File: b.txt\n@@\n-b \u00e9t\u00e9\n+B\n*** End Patch"
        )
        text = "call tool apply_patch with " + json.dumps({"patch": patch})
        turn = raw.call("prompt.submit", {"session_id": session, "text": text})["result"]
        asked = event(raw, "approval.request", turn_id=turn["turn_id"])
        answer = {"session_id": session, "request_id": asked["request_id"], "decision": "once"}
        raw.call("approval.respond", answer)
        assert poll_until(first.exists, 30), raw.child.err.text  # a.txt written, b.txt not yet
        stop = {"session_id": session, "stop": STOP, "turn_id": turn["turn_id"]}
        assert raw.call("session.interrupt", stop)["result"] == {"turn_id": turn["turn_id"]}
        with open(gate, "wb") as release:  # the first file's write returns now
            release.write(b"go")
        done = event(raw, "message.complete", turn_id=turn["turn_id"])
        assert done["exit_reason"] == "interrupted_by_user"
        assert (work / "a.txt").read_bytes() == b"ALPHA\nbeta\ngamma\n"
        assert (work / "b.txt").read_bytes() == B_TEXT  # the stop came first: never written
        undone = raw.call("session.undo", {"session_id": session})["result"]
        assert undone["undone"] and undone["restored"] == ["a.txt"]
        assert (work / "a.txt").read_bytes() == A_TEXT
        assert (work / "b.txt").read_bytes() == B_TEXT
    finally:
        raw.child.kill()


def test_a_shell_turn_is_undone_from_its_snapshot(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "a.txt").write_bytes(A_TEXT)
    (work / "b.txt").write_bytes(B_TEXT)
    raw = start(provider, tmp_path / "desk.db", work)
    try:
        session = raw.call("session.create")["result"]["session_id"]
        script = "printf 'x' > a.txt && rm b.txt && mkdir -p sub && echo new > sub/c.txt"
        tool_turn(raw, session, "shell", {"command": script})
        assert (work / "a.txt").read_bytes() == b"x" and not (work / "b.txt").exists()
        undone = raw.call("session.undo", {"session_id": session})["result"]
        assert sorted(undone["restored"]) == ["a.txt", "b.txt"]
        assert undone["removed"] == ["sub/c.txt"]  # the command created it
        assert (work / "a.txt").read_bytes() == A_TEXT
        assert (work / "b.txt").read_bytes() == B_TEXT
        assert not (work / "sub" / "c.txt").exists()
    finally:
        raw.child.kill()
