"""Console commands: each runs under a fresh scope; cancel, timeout and frontend-gone stop
the nested agent for real, and a queued command that is cancelled never runs."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.provider.client import ProviderConfig
from agent.stops import StopRequest, Surface
from contract.events import ConsoleComplete, ConsoleOutput, SessionCreated
from demo_model.server import DemoModelServer
from tests.support import EventLog, cut_short, poll_until
from tui_gateway.gateway import Gateway, GatewayConfig


class Console:
    """A gateway, its event log and one session, for console tests."""

    def __init__(self, provider: ProviderConfig, cwd: Path, **config: Any) -> None:
        self.gateway = Gateway(GatewayConfig(provider=provider, cwd=cwd, **config))
        self.log = EventLog()
        self.gateway.subscribe(self.log)
        self.session = self.gateway.session_create()

    def run(self, line: str) -> str:
        return self.gateway.console_run(self.session, line)

    def complete(self, command_id: str, timeout: float = 10.0) -> ConsoleComplete:
        def done(_ev: object) -> bool:
            return any(c.command_id == command_id for c in self.log.of_type(ConsoleComplete))

        assert self.log.wait_for(done, timeout)
        return next(c for c in self.log.of_type(ConsoleComplete) if c.command_id == command_id)

    def output(self, command_id: str) -> str:
        return "".join(
            o.text for o in self.log.of_type(ConsoleOutput) if o.command_id == command_id
        )


@pytest.fixture
def console(provider: ProviderConfig, tmp_path: Path) -> Iterator[Console]:
    (tmp_path / "notes.md").write_text("# Notes\n\nStops must really stop.\n")
    (tmp_path / "plan.md").write_text("# Plan\n\nShip the walking skeleton.\n")
    c = Console(provider, tmp_path)
    yield c
    assert c.gateway.shutdown(timeout_s=10).threads_left == []


def desk_threads() -> set[str]:
    return {t.name for t in threading.enumerate() if t.name.startswith("desk-console")}


def test_help_sessions_new_and_model(console: Console) -> None:
    done = console.complete(console.run("/help"))
    assert done.status == "ok"
    assert "digest PATH..." in console.output(done.command_id)

    new = console.complete(console.run("/new side quest"))
    assert new.status == "ok" and new.focus_session is not None
    assert any(isinstance(e.payload, SessionCreated) for e in console.log.events)

    listing = console.complete(console.run("/sessions"))
    assert "side quest" in console.output(listing.command_id)

    model = console.complete(console.run("/model other-model"))
    assert model.status == "ok"
    assert console.gateway.provider_for(console.session).model == "other-model"


def test_bad_lines_give_one_clear_line(console: Console) -> None:
    for line, words in [
        ("/nope", "unknown command"),
        ("/model a b", "usage: /model NAME"),
        ("/server a b", "usage: /server [URL]"),
        ("/server ftp://x", "not a model server URL"),
        ("digest", "usage: digest PATH"),
        ("digest 'unclosed", "cannot parse"),
    ]:
        done = console.complete(console.run(line))
        assert done.status == "error" and words in done.message
        assert "\n" not in done.message


def test_digest_summarises_each_file_with_a_nested_agent(
    console: Console, demo_server: DemoModelServer
) -> None:
    done = console.complete(console.run("digest notes.md plan.md missing.md"))
    assert done.status == "error" and done.message == "could not read missing.md"
    text = console.output(done.command_id)
    assert "## notes.md" in text and "## plan.md" in text
    assert "missing.md: cannot read it" in text
    assert len(demo_server.records.list()) == 2


@pytest.mark.parametrize("how", ["user", "timeout", "frontend_gone", "shutdown"])
def test_a_cancel_stops_the_nested_agent_and_is_booked_right(
    how: str, provider: ProviderConfig, tmp_path: Path, demo_server: DemoModelServer
) -> None:
    (tmp_path / "big.md").write_text("word " * 2000)
    demo_server.configure(tokens_per_second=40.0)
    timeout = 0.5 if how == "timeout" else 60.0
    c = Console(provider, tmp_path, console_timeout_s=timeout)
    command = c.run("digest big.md big.md")
    assert demo_server.records.wait_for(lambda r: bool(r) and r[-1].first_token_at is not None, 5)
    if how == "user":
        stop = StopRequest.by_user(Surface.CONSOLE_CANCEL)
        assert c.gateway.console_cancel(command, stop)
    elif how == "frontend_gone":
        assert c.gateway.frontend_gone() == 1
    elif how == "shutdown":
        assert c.gateway.shutdown(timeout_s=10).threads_left == []
    done = c.complete(command)
    try:
        assert done.status == ("timeout" if how == "timeout" else "cancelled")
        if how == "user":
            assert done.message == "stopped by the user"
        else:
            assert done.message.startswith("stopped by the system: ")
        cut_short(demo_server)
        assert len(demo_server.records.list()) == 1, "the second file was still sent"
    finally:
        assert c.gateway.shutdown(timeout_s=10).threads_left == []
    assert desk_threads() == set()


def test_a_queued_command_that_is_cancelled_never_runs(
    provider: ProviderConfig, tmp_path: Path, demo_server: DemoModelServer
) -> None:
    (tmp_path / "a.md").write_text("alpha")
    demo_server.configure(prompt_delay_s=30.0)
    c = Console(provider, tmp_path, console_workers=1)
    try:
        first = c.run("digest a.md")
        queued = c.run("/new should-never-exist")
        assert demo_server.records.wait_for(lambda r: bool(r), 5)
        assert c.gateway.console_cancel(queued, StopRequest.by_user(Surface.CONSOLE_CANCEL))
        dropped = c.complete(queued)
        assert dropped.status == "cancelled" and "before it started" in dropped.message
        c.gateway.console_cancel(first, StopRequest.by_user(Surface.CONSOLE_CANCEL))
        assert c.complete(first).status == "cancelled"
        assert not c.gateway.console_cancel(first, StopRequest.by_user(Surface.CONSOLE_CANCEL))
        assert "should-never-exist" not in "\n".join(c.gateway.session_summaries())
    finally:
        assert c.gateway.shutdown(timeout_s=10).threads_left == []


def test_a_command_deaf_to_its_cancel_is_reported_stuck_in_time(
    provider: ProviderConfig, tmp_path: Path
) -> None:
    """``digest`` of a FIFO blocks in a read no scope can interrupt: the cancel is reported
    as stuck once the exit bound has passed, while the worker is still blocked."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    console = Console(provider, tmp_path, shutdown_timeout_s=0.5)
    writer: int | None = None
    try:
        command = console.run(f"digest {fifo.name}")

        def reader_blocked() -> bool:  # the command opened the FIFO and waits for data
            nonlocal writer
            try:
                writer = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                return False
            return True

        assert poll_until(reader_blocked, 10)
        assert console.gateway.console_cancel(command, StopRequest.by_user(Surface.CONSOLE_CANCEL))
        done = console.complete(command, timeout=10)  # before the worker exits
        assert done.status == "cancelled" and "did not exit within 0.5 s" in done.message
        assert any(t.startswith("desk-console-") for t in desk_threads())
    finally:
        if writer is not None:
            os.close(writer)  # end of file: the read returns and the worker sees its cancel
        assert console.gateway.shutdown(timeout_s=10).threads_left == []
