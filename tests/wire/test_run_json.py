"""``desk run --json``: one JSON object a line, valid against the published schema, ending with
exactly one ``turn.completed`` whatever ends the run, with ``desk run``'s exit codes."""

from __future__ import annotations

import json
import random
import signal
import sys
import threading
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from agent.provider.client import ProviderConfig
from demo_model.server import DemoModelServer
from tests.desk.test_pty_stop import desk_command
from tests.support import cut_short, poll_until
from tests.wire.kit import DEADLINE_S, Child, slow_reply, wire_cmd
from tests.wire.test_schema import problems, validator

LINE = validator("/$defs/RunLine")
STORY = "tell me a story about a lighthouse"


def run_json(provider: ProviderConfig, *args: str) -> Child:
    return Child(wire_cmd("run", provider, "--json", *args))


def lines_of(child: Child) -> list[dict[str, Any]]:
    """Every line the run wrote, each checked against the schema's RunLine and its own
    ``run.<type>`` payload schema."""
    text = child.out.wait_closed().decode("utf-8")
    assert text.endswith("\n")
    lines = [json.loads(line) for line in text.splitlines()]
    for line in lines:
        assert problems(LINE, line) == [], line
        assert problems(validator(f"/run/{line['type']}"), line["payload"]) == [], line
    assert lines[0]["type"] == "session.started"
    assert [x["type"] for x in lines].count("turn.completed") == 1
    assert lines[-1]["type"] == "turn.completed"
    assert {x["session_id"] for x in lines} == {lines[0]["session_id"]}
    return lines


def test_a_completed_turn_with_a_tool_call(provider: ProviderConfig) -> None:
    prompt = 'call tool shell with {"command": "echo from the tool"}'
    child = run_json(provider, "--yes", prompt)
    assert child.wait(30) == 0
    lines = lines_of(child)
    kinds = [x["type"] for x in lines]
    for wanted in ("turn.started", "approval.requested", "tool.started", "tool.completed"):
        assert wanted in kinds, wanted
    resolved = next(x for x in lines if x["type"] == "approval.resolved")["payload"]
    assert resolved["decision"] == "once"
    tool = next(x for x in lines if x["type"] == "tool.completed")["payload"]
    assert tool["name"] == "shell" and "from the tool" in tool["content"]
    last = lines[-1]["payload"]
    assert (last["status"], last["exit_reason"], last["stop"]) == ("completed", "completed", None)
    assert last["prompt_tokens"] > 0 and last["version"] == 2
    assert child.err.wait_closed() == b""


def test_the_reply_streams_as_joined_deltas_and_equals_the_canonical_text(
    provider: ProviderConfig, demo_server: DemoModelServer
) -> None:
    slow_reply(demo_server, 200.0)
    child = run_json(provider, "[demo tps=200] " + STORY)
    assert child.wait(30) == 0
    lines = lines_of(child)
    deltas = [x["payload"]["text"] for x in lines if x["type"] == "message.delta"]
    text = lines[-1]["payload"]["text"]
    assert "".join(deltas) == text
    record = demo_server.records.last()
    assert record is not None
    assert 1 < len(deltas) < record.tokens_generated  # pieces were joined, and it streamed


@pytest.mark.parametrize(
    ("sig", "code", "exit_reason", "surface"),
    [
        (signal.SIGINT, 130, "interrupted_by_user", "headless.sigint"),
        (signal.SIGTERM, 143, "interrupted_by_system(gateway.shutdown)", "gateway.shutdown"),
    ],
    ids=["sigint", "sigterm"],
)
def test_a_stopped_turn_ends_with_one_turn_completed_and_its_receipt(
    provider: ProviderConfig,
    demo_server: DemoModelServer,
    sig: signal.Signals,
    code: int,
    exit_reason: str,
    surface: str,
) -> None:
    slow_reply(demo_server)
    child = run_json(provider, STORY)
    try:
        assert child.out.wait_for(lambda data: b'"message.delta"' in data, 2 * DEADLINE_S)
        child.proc.send_signal(sig)
        assert child.wait() == code
        cut_short(demo_server)
        last = lines_of(child)[-1]["payload"]
        assert (last["status"], last["exit_reason"]) == ("interrupted", exit_reason)
        assert last["stop"]["surface"] == surface and last["stop"]["closed_ms"] is not None
        assert last["text"]
    finally:
        child.kill()


def test_a_failed_turn(provider: ProviderConfig, demo_server: DemoModelServer) -> None:
    demo_server.configure(fault="http:400")
    child = run_json(provider, "hello")
    assert child.wait(30) == 1
    last = lines_of(child)[-1]["payload"]
    assert last["status"] == "failed" and last["exit_reason"].startswith("failed(")
    assert last["error"]
    [line] = child.err.wait_closed().decode().splitlines()
    assert line.startswith("desk: ")


def test_a_refused_run_still_ends_with_turn_completed(provider: ProviderConfig) -> None:
    child = run_json(provider, "--session", "no-such-session", "hello")
    assert child.wait(30) == 1
    text = child.out.wait_closed().decode("utf-8")
    [line] = [json.loads(x) for x in text.splitlines()]
    assert problems(LINE, line) == []
    assert line["type"] == "turn.completed" and line["session_id"] == ""
    assert line["payload"]["exit_reason"] == "failed(GatewayError)"


def reading_stdin(pid: int) -> bool:
    """True while the process's main thread waits on a pipe (``desk run -`` reads its prompt)."""
    try:
        return "pipe_read" in Path(f"/proc/{pid}/wchan").read_text()
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("entry", ["desk", "wire"])
def test_a_ctrl_c_before_the_run_started_still_ends_with_turn_completed(
    provider: ProviderConfig, entry: str
) -> None:
    args = ["--base-url", provider.base_url, "--model", provider.model, "--json", "-"]
    argv = [*desk_command(), "run", *args] if entry == "desk" else wire_cmd("run", provider)
    argv = argv if entry == "desk" else [*argv, "--json", "-"]
    child = Child(argv, stdin=True)  # the prompt is read from stdin: nothing has started yet
    try:
        assert poll_until(lambda: reading_stdin(child.proc.pid), timeout=30.0)
        child.proc.send_signal(signal.SIGINT)
        assert child.wait(30) == 130
        text = child.out.wait_closed().decode("utf-8")
        [line] = [json.loads(x) for x in text.splitlines()]
        assert problems(LINE, line) == []
        assert problems(validator("/run/turn.completed"), line["payload"]) == []
        assert line["type"] == "turn.completed" and line["session_id"] == ""
        last = line["payload"]
        assert (last["status"], last["exit_reason"]) == ("interrupted", "interrupted_by_user")
        assert last["stop"]["issuer"] == "user" and last["stop"]["surface"] == "headless.sigint"
        assert "before the run started" in last["stop"]["reason"]
        err = child.err.wait_closed().decode("utf-8")
        assert "Traceback" not in err and "before the run started" in err
    finally:
        child.kill()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_ctrl_c_anywhere_in_the_start_ends_with_one_turn_completed_and_130(
    provider: ProviderConfig, demo_server: DemoModelServer
) -> None:
    """Randomized: the prompt goes in, then Ctrl+C comes at a random moment of the start (the
    gateway being built, the session created, the turn submitted or streaming)."""
    slow_reply(demo_server)
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    args = ["run", "--base-url", provider.base_url, "--model", provider.model, "--json", "-"]
    for _ in range(4):
        child = Child([*desk_command(), *args], stdin=True)
        try:
            assert poll_until(partial(reading_stdin, child.proc.pid), timeout=30.0)
            assert child.proc.stdin is not None
            child.proc.stdin.write(STORY.encode())
            child.proc.stdin.close()
            threading.Event().wait(rng.uniform(0.0, 0.3))  # a random moment, not a wait for work
            child.proc.send_signal(signal.SIGINT)
            assert child.wait(30) == 130, seed
            lines = [json.loads(x) for x in child.out.wait_closed().decode().splitlines()]
            assert [x["type"] for x in lines].count("turn.completed") == 1, seed
            assert lines[-1]["type"] == "turn.completed", seed
            last = lines[-1]["payload"]
            assert (last["status"], last["exit_reason"]) == ("interrupted", "interrupted_by_user")
            assert last["stop"]["surface"] == "headless.sigint", seed
            assert "Traceback" not in child.err.wait_closed().decode(), seed
        finally:
            child.kill()
