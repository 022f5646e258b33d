"""``desk run --json`` ended by SIGTERM or SIGHUP at any moment of its start: exactly one
``turn.completed``, booked to the system (``interrupted_by_system(gateway.shutdown)``), exit 143,
as a Ctrl+C there ends with one booked to the person and 130; and the store keeps no turn open."""

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
from agent.store.opener import open_store
from demo_model.server import DemoModelServer
from tests.desk.test_pty_stop import desk_command
from tests.support import poll_until, running_demo
from tests.wire.kit import DEADLINE_S, Child, wire_cmd
from tests.wire.test_run_json import LINE, STORY, lines_of, reading_stdin
from tests.wire.test_schema import problems, validator

SYSTEM = "interrupted_by_system(gateway.shutdown)"
SIGNALS = [signal.SIGTERM, signal.SIGHUP]


def run_argv(entry: str, provider: ProviderConfig, db: Path) -> list[str]:
    """``desk run --json -`` (the prompt from stdin) by the ``desk`` script or the wire's."""
    flags = ["--db", str(db), "--json", "-"]
    if entry == "desk":
        connect = ["--base-url", provider.base_url, "--model", provider.model]
        return [*desk_command(), "run", *connect, *flags]
    return [*wire_cmd("run", provider), *flags]


def assert_system_stop(last: dict[str, Any]) -> None:
    assert (last["status"], last["exit_reason"]) == ("interrupted", SYSTEM)
    assert last["stop"]["issuer"] == "system" and last["stop"]["surface"] == "gateway.shutdown"
    assert "the desk is quitting" not in last["stop"]["reason"]  # no desk window quits here


def assert_nothing_open(db: Path) -> None:
    """The store opens, and no turn of the run is left running or queued."""
    store = open_store(db)
    try:
        assert store.turns.open_turns() == []
        assert store.queue.queued_prompts() == []
    finally:
        store.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("entry", ["desk", "wire"])
@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_a_signal_before_the_first_event_writes_turn_completed_alone_and_143(
    provider: ProviderConfig, tmp_path: Path, entry: str, sig: signal.Signals
) -> None:
    db = tmp_path / "sessions.db"
    child = Child(run_argv(entry, provider, db), stdin=True)  # waits for its prompt
    try:
        assert poll_until(lambda: reading_stdin(child.proc.pid), timeout=30.0)
        child.proc.send_signal(sig)
        assert child.wait(30) == 143
        text = child.out.wait_closed().decode("utf-8")
        [line] = [json.loads(x) for x in text.splitlines()]
        assert problems(LINE, line) == []
        assert problems(validator("/run/turn.completed"), line["payload"]) == []
        assert line["type"] == "turn.completed" and line["session_id"] == ""
        assert_system_stop(line["payload"])
        assert f"stopped by {sig.name} before the run started" == line["payload"]["stop"]["reason"]
        err = child.err.wait_closed().decode("utf-8")
        assert "Traceback" not in err and f"stopped by {sig.name}" in err
    finally:
        child.kill()


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_a_signal_after_turn_started_ends_the_turn_as_the_system(
    tmp_path: Path, sig: signal.Signals
) -> None:
    with running_demo(40, prompt_delay_s=30.0) as server:  # the reply has not begun
        provider = ProviderConfig(base_url=server.base_url, model="demo")
        db = tmp_path / "sessions.db"
        child = Child(run_argv("wire", provider, db), stdin=True)
        try:
            assert child.proc.stdin is not None
            child.proc.stdin.write(STORY.encode())
            child.proc.stdin.close()
            assert child.out.wait_for(lambda data: b'"turn.started"' in data, 2 * DEADLINE_S)
            child.proc.send_signal(sig)
            assert child.wait() == 143
            lines = lines_of(child)  # session.started first, one turn.completed last
            assert_system_stop(lines[-1]["payload"])
            assert "Traceback" not in child.err.wait_closed().decode()
        finally:
            child.kill()
        assert_nothing_open(db)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_sigterm_anywhere_in_the_start_ends_with_one_turn_completed_and_143(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    """Randomized: the prompt goes in, then SIGTERM comes at a random moment of the start (the
    gateway being built, the session created, the turn submitted or streaming)."""
    demo_server.configure(tokens_per_second=40.0)
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    for attempt in range(4):
        db = tmp_path / f"sessions-{attempt}.db"
        entry = ("desk", "wire")[attempt % 2]
        child = Child(run_argv(entry, provider, db), stdin=True)
        try:
            assert poll_until(partial(reading_stdin, child.proc.pid), timeout=30.0)
            assert child.proc.stdin is not None
            child.proc.stdin.write(STORY.encode())
            child.proc.stdin.close()
            threading.Event().wait(rng.uniform(0.0, 0.2))  # a random moment, not a wait for work
            child.proc.send_signal(signal.SIGTERM)
            assert child.wait(30) == 143, seed
            lines = [json.loads(x) for x in child.out.wait_closed().decode().splitlines()]
            assert [x["type"] for x in lines].count("turn.completed") == 1, seed
            assert lines[-1]["type"] == "turn.completed", seed
            assert_system_stop(lines[-1]["payload"])
            assert "Traceback" not in child.err.wait_closed().decode(), seed
        finally:
            child.kill()
        if db.exists():
            assert_nothing_open(db)
