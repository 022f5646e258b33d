"""Tool calls a killed desk leaves behind: one waiting for its approval, and a child agent's.

A ``desk gateway --stdio`` is killed with SIGKILL while a shell call waits for the person's
answer, or while a child agent's shell call runs; the next desk opens the file as a container
started anew would, and the resumed session shows what became of each call.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

from agent.provider.client import ProviderConfig
from agent.store import CRASH_EXIT_REASON, LOST_RESULT, NOT_ANSWERED, SqliteStore
from tests.support import poll_until
from tests.wire.kit import Child, RawStdio, gateway_cmd, wire_cmd
from tests.wire.test_crash_recovery import elsewhere
from tui_gateway.gateway import Gateway, GatewayConfig


def approval_asked(message: dict[str, Any]) -> bool:
    """True for an ``approval.request`` event."""
    params = message.get("params")
    return (
        message.get("method") == "event"
        and isinstance(params, dict)
        and params.get("type") == "approval.request"
    )


def test_a_desk_killed_while_an_approval_waits_shows_the_call_not_run(
    provider: ProviderConfig, tmp_path: Path
) -> None:
    db = tmp_path / "desk.db"
    marker = tmp_path / "ran"
    command = f"touch {marker}"
    prompt = "call tool shell with " + json.dumps({"command": command})
    raw = RawStdio(gateway_cmd(provider, "--db", str(db), "--workspace", str(tmp_path)))
    try:
        session = raw.call("session.create")["result"]["session_id"]
        raw.call("prompt.submit", {"session_id": session, "text": prompt})
        assert raw.wait_message(approval_asked, 30), raw.child.err.text
        os.kill(raw.child.proc.pid, signal.SIGKILL)
        assert raw.child.wait() == -signal.SIGKILL
    finally:
        raw.child.kill()
    assert not marker.exists()
    with SqliteStore(db, liveness=elsewhere(db)) as later:
        (turn,) = later.turns.list_turns(session)
        assert turn.exit_reason == CRASH_EXIT_REASON
        prompted, asked, result = later.transcript.active_messages(session)
        assert (prompted.role, prompted.content) == ("user", prompt)
        assert [(c.name, json.loads(c.arguments)) for c in asked.tool_calls] == [
            ("shell", {"command": command})
        ]
        assert (result.role, result.tool_call_id) == ("tool", asked.tool_calls[0].id)
        assert result.content == NOT_ANSWERED
    gateway = Gateway(GatewayConfig(provider=provider, cwd=tmp_path), store=SqliteStore(db))
    try:  # the resumed session shows the call's card, not run
        resumed = gateway.session_resume(session)
        assert [(e.role, e.tool_names) for e in resumed.transcript] == [
            ("user", ()),
            ("assistant", ("shell",)),
            ("tool", ()),
        ]
        assert "before the person answered" in resumed.transcript[2].content
        assert "not run" in resumed.transcript[2].content
    finally:
        assert gateway.shutdown(timeout_s=5).threads_left == []


def test_a_desk_killed_while_a_child_agent_runs_a_shell_call_keeps_the_childs_call(
    provider: ProviderConfig, tmp_path: Path
) -> None:
    db = tmp_path / "desk.db"
    marker = tmp_path / "started"
    command = f"touch {marker}; sleep 600"
    prompt = "delegate: call tool shell with " + json.dumps({"command": command})
    child = Child(
        wire_cmd("run", provider, "--yes", "--workspace", str(tmp_path), "--db", str(db), prompt)
    )
    try:
        assert poll_until(marker.exists, 30), child.err.text  # the child's call runs
        os.kill(child.proc.pid, signal.SIGKILL)
        assert child.wait() == -signal.SIGKILL
    finally:
        child.kill()
    gateway = Gateway(
        GatewayConfig(provider=provider, cwd=tmp_path),
        store=SqliteStore(db, liveness=elsewhere(db)),
    )
    try:  # the resumed session's child card says what became of the child's call
        (session,) = gateway.session_list()
        resumed = gateway.session_resume(session.session_id)
        (kid,) = [c for e in resumed.transcript for c in e.children]
        assert kid.exit_reason == CRASH_EXIT_REASON
        (call,) = kid.calls
        assert (call.name, json.loads(call.arguments)) == ("shell", {"command": command})
        assert (call.result, call.is_error) == (LOST_RESULT, True)
    finally:
        assert gateway.shutdown(timeout_s=5).threads_left == []
