"""``desk run`` and ``desk serve`` as child processes (``python -m tui_gateway.wire ...``)."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from agent.provider.client import ProviderConfig
from demo_model.server import DemoModelServer
from tests.support import cut_short
from tests.wire.kit import (
    DEADLINE_S,
    ROOT,
    Child,
    child_env,
    slow_reply,
    wire_cmd,
)
from tui_gateway.wire.headless import refusal_lines

STORY = "tell me a story about a lighthouse"


def run_cmd(provider: ProviderConfig, *args: str) -> list[str]:
    return wire_cmd("run", provider, *args)


def test_run_prints_the_reply_and_exits_0(provider: ProviderConfig) -> None:
    child = Child(run_cmd(provider, "reply with exactly: the desk runs headless"))
    assert child.wait() == 0
    assert child.out.wait_closed() == b"the desk runs headless\n"
    assert child.err.wait_closed() == b""


def test_run_says_when_the_reply_was_cut_at_the_token_limit(
    provider: ProviderConfig, demo_server: DemoModelServer
) -> None:
    demo_server.configure(max_tokens=12)
    child = Child(run_cmd(provider, "tell me a story about a lighthouse"))
    assert child.wait() == 0
    assert child.out.wait_closed() != b""
    err = child.err.wait_closed().decode("utf-8")
    assert err == "desk: ⚠ cut at the reply's token limit (12 tokens)\n"


@pytest.mark.parametrize(
    ("sig", "code", "exit_reason"),
    [
        (signal.SIGINT, 130, "interrupted_by_user"),
        (signal.SIGTERM, 143, "interrupted_by_system(gateway.shutdown)"),
    ],
    ids=["sigint-user-stop", "sigterm-system-stop"],
)
def test_run_stops_on_a_signal(
    provider: ProviderConfig,
    demo_server: DemoModelServer,
    sig: signal.Signals,
    code: int,
    exit_reason: str,
) -> None:
    slow_reply(demo_server)
    child = Child(run_cmd(provider, STORY))
    try:
        assert child.out.wait_for(lambda data: b"lighthouse" in data, 2 * DEADLINE_S)
        child.proc.send_signal(sig)
        assert child.wait() == code
        cut_short(demo_server)
        [line] = child.err.wait_closed().decode().splitlines()
        assert line.startswith(f"desk: {exit_reason}")
        printed = child.out.wait_closed().decode()
        assert printed.startswith("## About: tell me a story") and printed.endswith("\n")
    finally:
        child.kill()


def test_run_failure_is_one_line_and_exit_1() -> None:
    dead = ProviderConfig(base_url="http://127.0.0.1:9/v1", model="demo")
    child = Child(run_cmd(dead, "hello"))
    assert child.wait() == 1
    [line] = child.err.wait_closed().decode().splitlines()
    assert line.startswith("desk: ") and "127.0.0.1:9" in line
    assert child.out.wait_closed() == b""


def test_run_without_a_server_is_a_usage_error() -> None:
    child = Child([sys.executable, "-m", "tui_gateway.wire", "run", "hello"])
    assert child.wait() == 2
    [line] = child.err.wait_closed().decode().splitlines()
    assert "--base-url" in line


def test_desk_without_a_terminal_says_it_needs_one_and_exits_2(provider: ProviderConfig) -> None:
    # It waited for keys that never came, using the CPU, until killed.
    child = Child([sys.executable, "-m", "desk", "--base-url", provider.base_url])
    try:
        assert child.wait() == 2
        [line] = child.err.wait_closed().decode().splitlines()
        assert line.startswith("desk: needs a terminal") and "desk run" in line
        assert child.out.wait_closed() == b""
    finally:
        child.kill()


def test_run_continues_a_saved_session(provider: ProviderConfig, tmp_path: Path) -> None:
    db = str(tmp_path / "desk.db")
    first = Child(run_cmd(provider, "--db", db, "reply with exactly: first"))
    assert first.wait() == 0
    from agent.store import SqliteStore

    store = SqliteStore(db)
    [row] = store.sessions.list_sessions()
    store.close()
    second = Child(run_cmd(provider, "--db", db, "--session", row.id, "reply with exactly: again"))
    assert second.wait() == 0
    assert second.out.wait_closed() == b"again\n"
    missing = Child(run_cmd(provider, "--db", db, "--session", "nope", "hi"))
    assert missing.wait() == 1


def test_serve_makes_a_private_token_once_and_stops_on_sigterm(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    slow_reply(demo_server)
    token_file = tmp_path / "config" / "desk" / "token"
    args = ("--port", "0", "--token-file", str(token_file))
    child = Child(wire_cmd("serve", provider, *args))
    try:
        listening = child.out.wait_for(lambda data: b"listening on" in data, 2 * DEADLINE_S)
        assert listening, child.err.text
        out = child.out.text
        url = re.search(r"listening on (http://\S+)", out)
        assert url is not None and f"made an API token; it is in {token_file}" in out
        token = token_file.read_text().strip()
        assert len(token) >= 40 and token not in out and token not in child.err.text
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        base = url.group(1)
        assert httpx.get(base + "/v1/models").status_code == 401
        headers = {"Authorization": f"Bearer {token}"}
        rebound = {**headers, "Host": "evil.example:" + base.rsplit(":", 1)[1]}
        assert httpx.get(base + "/v1/models", headers=rebound).status_code == 421
        assert httpx.get(base + "/v1/models", headers=headers).json()["data"][0]["id"] == "demo"
        session = httpx.post(base + "/v1/sessions", headers=headers).json()["session_id"]
        events: list[str] = []
        streaming = threading.Event()

        def run() -> None:
            url = f"{base}/v1/sessions/{session}/runs"
            with httpx.stream("POST", url, headers=headers, json={"prompt": STORY}) as response:
                for line in response.iter_lines():
                    events.append(line)
                    if line == "event: message.delta":
                        streaming.set()

        reader = threading.Thread(target=run)
        reader.start()
        assert streaming.wait(2 * DEADLINE_S)
        child.proc.send_signal(signal.SIGTERM)  # the gateway stops first, as the system
        assert child.wait() == 0
        reader.join(DEADLINE_S)
        data = [line.removeprefix("data: ") for line in events if line.startswith("data: ")]
        last = json.loads(data[-1])
        assert last["type"] == "message.complete"
        assert last["payload"]["exit_reason"] == "interrupted_by_system(gateway.shutdown)"
    finally:
        child.kill()
    again = Child(wire_cmd("serve", provider, *args))
    try:
        assert again.out.wait_for(lambda data: b"listening on" in data, 2 * DEADLINE_S)
        assert token not in again.out.text
        assert f"the API token is in {token_file}" in again.out.text
        again.proc.send_signal(signal.SIGINT)
        assert again.wait() == 0
    finally:
        again.kill()


def test_a_refused_call_says_why_and_keeps_the_sandbox_line_apart() -> None:
    assert refusal_lines("shell", "sandbox: workspace-write, no network") == [
        "desk: the shell call was not allowed: --yes was not given (--yes allows tool calls)",
        "desk:   shown with the call: sandbox: workspace-write, no network",
    ]
    assert len(refusal_lines("write_file", "")) == 1


def test_run_denies_tool_calls_unless_told_yes(provider: ProviderConfig, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    prompt = f'call tool shell with {{"command": "touch {marker}"}}'
    denied = Child(run_cmd(provider, prompt))
    assert denied.wait() == 0
    said = denied.err.wait_closed().decode().splitlines()
    assert "desk: the shell call was not allowed: --yes was not given" in said[0]
    assert not any("sandbox" in line for line in said if "not allowed" in line)
    assert not marker.exists()
    told = denied.out.wait_closed().decode()  # the demo model quotes what it was told
    assert "refused in desk run without --yes, where no one is asked" in told
    assert "the person declined" not in told
    # In the workspace: a sandboxed shell (the default where bubblewrap runs) writes only there.
    allowed = Child(run_cmd(provider, "--yes", "--workspace", str(tmp_path), prompt))
    assert allowed.wait() == 0
    assert marker.exists()


def read_pty(master: int, proc: subprocess.Popen[bytes], timeout_s: float = 30.0) -> bytes:
    """Everything a child wrote to its terminal until it exited and the pty drained."""
    data = b""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child's side closed
                break
            if not chunk:
                break
            data += chunk
        elif proc.poll() is not None:
            break
    return data


def test_run_on_a_terminal_makes_control_characters_visible_and_a_pipe_gets_them_as_sent(
    provider: ProviderConfig, tmp_path: Path
) -> None:
    hostile = "\x1b]0;owned\x07\x1b[2J\x1b[?1049l\x9b2J\x1bc done"
    prompt = "reply with exactly: " + hostile
    piped = Child(run_cmd(provider, prompt))
    assert piped.wait() == 0
    assert piped.out.wait_closed() == (hostile + "\n").encode()  # a pipe gets the exact reply

    master, slave = pty.openpty()
    proc = subprocess.Popen(
        run_cmd(provider, prompt),
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=slave,
        env=child_env(),
        cwd=ROOT,
    )
    os.close(slave)
    try:
        shown = read_pty(master, proc)
        assert proc.wait(timeout=10) == 0
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
    assert b"\x1b" not in shown and "\x9b".encode() not in shown, shown
    assert "␛]0;owned␇␛[2J␛[?1049l<U+009B>2J␛c done".encode() in shown
