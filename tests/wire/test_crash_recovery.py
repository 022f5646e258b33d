"""A desk killed with SIGKILL is recovered by the next one, whatever the hostname says.

``desk run`` and ``desk gateway`` run as child processes on a SQLite file and are killed in
the middle of a reply or of a compression. The next desk opens the file as a container started
anew would (another hostname): the turn comes back closed as a crash with the text that was on
screen, the compression's lease is taken over at once, and a desk that still runs is left alone.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from agent.provider.client import ProviderConfig
from agent.store import CRASH_EXIT_REASON, LOST_RESULT, LocalLiveness, SqliteStore
from contract.events import CompressionComplete
from demo_model.server import DemoModelServer
from tests.compression.kit import long_transcript
from tests.support import EventLog, poll_until
from tests.wire.kit import Child, RawStdio, gateway_cmd, wire_cmd
from tui_gateway.gateway import Gateway, GatewayConfig


def elsewhere(db: Path) -> LocalLiveness:
    """The liveness of a desk opening ``db`` in a container started anew: another hostname."""
    return LocalLiveness(Path(f"{db}-owners"), host="a-container-started-anew")


def draft_of(db: Path) -> str:
    """The draft of the open turn in ``db`` ("" when there is none yet)."""
    with SqliteStore(db, recover=False) as reader:
        return "".join(t.draft or "" for t in reader.turns.open_turns())


def test_a_killed_desk_run_is_recovered_under_another_hostname_with_what_was_shown(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    db = tmp_path / "desk.db"
    demo_server.configure(tokens_per_second=50.0, max_tokens=2000)
    child = Child(wire_cmd("run", provider, "--db", str(db), "write a long essay"))
    try:
        assert child.out.wait_for(lambda data: len(data) > 200, 30), child.err.text
        assert poll_until(lambda: len(draft_of(db)) > 100, 30)  # a draft is in the file
        os.kill(child.proc.pid, signal.SIGKILL)
        assert child.wait() == -signal.SIGKILL
    finally:
        child.kill()
    shown = child.out.text
    with SqliteStore(db, liveness=elsewhere(db)) as later:
        (session,) = later.sessions.list_sessions()
        (turn,) = later.turns.list_turns(session.id)
        assert turn.exit_reason == CRASH_EXIT_REASON and not turn.is_open
        prompt, reply = later.transcript.active_messages(session.id)
        assert (prompt.role, prompt.content) == ("user", "write a long essay")
        assert reply.role == "assistant" and reply.partial
        # What was shown, saved: the draft and what the client had read agree, and either may
        # be a few deltas ahead of the other (the kill lands between a draft write and a print).
        saved = reply.content
        assert saved and (shown.startswith(saved) or saved.startswith(shown))
        assert abs(len(saved) - len(shown)) < 200


def test_a_desk_that_still_runs_is_left_alone_under_another_hostname(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    db = tmp_path / "desk.db"
    demo_server.configure(tokens_per_second=100.0, max_tokens=300)
    child = Child(wire_cmd("run", provider, "--db", str(db), "write a long essay"))
    try:
        assert child.out.wait_for(lambda data: len(data) > 50, 30), child.err.text
        with SqliteStore(db, liveness=elsewhere(db)) as other:
            assert len(other.turns.open_turns()) == 1  # its owner provably lives
        assert child.wait(60) == 0
    finally:
        child.kill()
    with SqliteStore(db) as check:
        (session,) = check.sessions.list_sessions()
        (turn,) = check.turns.list_turns(session.id)
        assert turn.exit_reason == "completed"
        saved = check.transcript.active_messages(session.id)[-1].content
        assert saved == child.out.text.rstrip("\n")


def test_a_crash_during_a_compression_leaves_no_lease_behind(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    db = tmp_path / "desk.db"
    with SqliteStore(db) as store:
        session = store.sessions.create_session(title="long", messages=long_transcript()).id
    demo_server.configure(tokens_per_second=20.0)  # the summary streams slowly
    gateway = RawStdio(gateway_cmd(provider, "--db", str(db), "--context-window", "4000"))
    try:
        assert "result" in gateway.call("session.resume", {"session_id": session})
        assert "result" in gateway.call("session.compress", {"session_id": session})

        def summarizing(message: dict[str, object]) -> bool:
            params = message.get("params")
            payload = params.get("payload") if isinstance(params, dict) else None
            return isinstance(payload, dict) and payload.get("tokens_out", 0) > 0

        assert gateway.wait_message(summarizing, 30), gateway.child.err.text
        os.kill(gateway.child.proc.pid, signal.SIGKILL)
        assert gateway.child.wait() == -signal.SIGKILL
    finally:
        gateway.child.kill()
    demo_server.configure(tokens_per_second=2000.0)
    config = GatewayConfig(provider=provider, cwd=tmp_path, context_window=4000)
    again = Gateway(config, store=SqliteStore(db, liveness=elsewhere(db)))
    log = EventLog()
    again.subscribe(log)
    try:
        again.session_resume(session)
        again.session_compress(session)
        assert log.wait_for(lambda _e: bool(log.of_type(CompressionComplete)), 30)
        (complete,) = log.of_type(CompressionComplete)
        assert complete.status == "committed", complete.message
    finally:
        assert again.shutdown(timeout_s=5).threads_left == []


def test_a_desk_killed_during_a_shell_call_keeps_the_call_and_shows_it_failed(
    provider: ProviderConfig, tmp_path: Path
) -> None:
    db = tmp_path / "desk.db"
    marker = tmp_path / "started"
    command = f"touch {marker}; sleep 600"
    prompt = "call tool shell with " + json.dumps({"command": command})
    child = Child(
        wire_cmd("run", provider, "--yes", "--workspace", str(tmp_path), "--db", str(db), prompt)
    )
    try:
        assert poll_until(marker.exists, 30), child.err.text  # the call runs
        os.kill(child.proc.pid, signal.SIGKILL)
        assert child.wait() == -signal.SIGKILL
    finally:
        child.kill()
    with SqliteStore(db, liveness=elsewhere(db)) as later:
        (session,) = later.sessions.list_sessions()
        (turn,) = later.turns.list_turns(session.id)
        assert turn.exit_reason == CRASH_EXIT_REASON and turn.calls is None
        prompted, asked, result = later.transcript.active_messages(session.id)
        assert (prompted.role, prompted.content) == ("user", prompt)
        assert [(c.name, json.loads(c.arguments)) for c in asked.tool_calls] == [
            ("shell", {"command": command})
        ]
        assert (result.role, result.tool_call_id) == ("tool", asked.tool_calls[0].id)
        assert result.content == LOST_RESULT
    gateway = Gateway(GatewayConfig(provider=provider, cwd=tmp_path), store=SqliteStore(db))
    try:  # the resumed session shows the call's card, with what became of it
        resumed = gateway.session_resume(session.id)
        assert [(e.role, e.tool_names) for e in resumed.transcript] == [
            ("user", ()),
            ("assistant", ("shell",)),
            ("tool", ()),
        ]
        assert resumed.transcript[2].content == LOST_RESULT
        assert "desk stopped" in resumed.transcript[2].note
    finally:
        assert gateway.shutdown(timeout_s=5).threads_left == []
