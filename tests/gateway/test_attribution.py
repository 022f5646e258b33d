"""The attribution table: every stop surface x every phase of a turn.

For each pair it checks the booking (``interrupted_by_user`` only for user surfaces), that the
model server saw the connection close within 100 ms when a request was in flight, that no
worker thread or child process of the turn remains, and that a cut tool call names who stopped
it.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from agent.provider.client import ProviderConfig
from agent.stops import StopRequest, Surface
from contract.events import (
    ApprovalRequest,
    ApprovalResolved,
    ConsoleComplete,
    MessageDelta,
    ToolComplete,
    ToolOutput,
)
from demo_model.server import DemoModelServer
from tests.support import EventLog, cut_short
from tui_gateway.gateway import Gateway, GatewayConfig

TURN_PHASES = ("first_byte", "streaming", "tool", "approval")
TURN_SURFACES = ("desk.key", "desk.button", "frontend_gone", "shutdown", "eviction", "inactivity")
CONSOLE_SURFACES = ("console.cancel", "console.timeout", "frontend_gone", "shutdown")
SYSTEM_SURFACE = {
    "frontend_gone": Surface.API_DISCONNECT,
    "shutdown": Surface.GATEWAY_SHUTDOWN,
    "eviction": Surface.SESSION_EVICTED,
    "inactivity": Surface.INACTIVITY,
    "console.timeout": Surface.CONSOLE_TIMEOUT,
}
TOOL_COMMAND = "echo pid=$$; sh -c 'trap \"\" TERM; echo pid=$$; sleep 30' & wait"

CASES = [
    (phase, surface)
    for phase in TURN_PHASES
    for surface in TURN_SURFACES
    if not (surface == "inactivity" and phase in ("tool", "approval"))  # tools don't count
] + [("console", surface) for surface in CONSOLE_SURFACES]


@dataclass
class Setup:
    gateway: Gateway
    log: EventLog
    session: str


def start(phase: str, surface: str, provider: ProviderConfig, cwd: Path) -> Setup:
    gateway = Gateway(
        GatewayConfig(
            provider=provider,
            cwd=cwd,
            approvals=phase == "approval",
            inactivity_timeout_s=0.4 if surface == "inactivity" else 300.0,
            console_timeout_s=0.5 if surface == "console.timeout" else 60.0,
            max_sessions=1,
        )
    )
    log = EventLog()
    gateway.subscribe(log)
    return Setup(gateway, log, gateway.session_create())


def reach(phase: str, surface: str, setup: Setup, server: DemoModelServer) -> str:
    """Start work in ``phase`` and wait until it is there; returns the turn or command id."""
    log = setup.log
    if phase == "console":
        server.configure(tokens_per_second=40.0)
        command = setup.gateway.console_run(setup.session, "digest big.md")
        assert server.records.wait_for(lambda r: bool(r) and r[-1].first_token_at is not None, 5)
        return command
    if phase == "first_byte":
        server.configure(prompt_delay_s=30.0)
    elif surface == "inactivity":  # the stream goes quiet after a few tokens
        server.configure(tokens_per_second=40.0, fault="stall", fault_after_tokens=3)
    else:
        server.configure(tokens_per_second=40.0)
    prompt = "Tell me everything about stops"
    if phase in ("tool", "approval"):
        prompt = "call tool shell with " + json.dumps({"command": TOOL_COMMAND})
    turn = setup.gateway.prompt_submit(setup.session, prompt).turn_id
    if phase == "first_byte":
        assert server.records.wait_for(lambda r: bool(r) and r[-1].slot_acquired_at is not None, 5)
    elif phase == "streaming":
        assert log.wait_for(lambda _e: bool(log.of_type(MessageDelta)))
    elif phase == "tool":
        assert log.wait_for(lambda _e: tool_text(log).count("pid=") == 2)
    else:
        assert log.wait_for(lambda _e: bool(log.of_type(ApprovalRequest)))
    return turn


def tool_text(log: EventLog) -> str:
    return "".join(o.text for o in log.of_type(ToolOutput))


def fire(surface: str, setup: Setup, work_id: str, phase: str) -> float:
    """Stop the work from ``surface``; returns the monotonic time of the stop."""
    gateway, now = setup.gateway, time.monotonic()
    if surface in ("desk.key", "desk.button"):
        stop = StopRequest.by_user(Surface(surface))
        assert gateway.session_interrupt(setup.session, stop) == work_id
        return stop.requested_at
    if surface == "console.cancel":
        stop = StopRequest.by_user(Surface.CONSOLE_CANCEL)
        assert gateway.console_cancel(work_id, stop)
        return stop.requested_at
    if surface == "frontend_gone":
        assert gateway.frontend_gone() == 1
    elif surface == "shutdown":
        assert gateway.shutdown(timeout_s=10).threads_left == []
    elif surface == "eviction":
        gateway.session_create("a second session evicts the first")
    return now  # inactivity and console.timeout fire by themselves


@pytest.mark.parametrize(("phase", "surface"), CASES)
def test_attribution(
    phase: str, surface: str, provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    (tmp_path / "big.md").write_text("word " * 3000)
    threads_before = set(threading.enumerate())
    setup = start(phase, surface, provider, tmp_path)
    threads_before |= set(threading.enumerate())  # the subscription's delivery thread
    work_id = reach(phase, surface, setup, demo_server)
    pids = [int(p.split()[0]) for p in tool_text(setup.log).split("pid=")[1:]]
    fire(surface, setup, work_id, phase)
    user = surface in ("desk.key", "desk.button", "console.cancel")

    if phase == "console":
        assert setup.log.wait_for(lambda _e: bool(setup.log.of_type(ConsoleComplete)), 10)
        (done,) = setup.log.of_type(ConsoleComplete)
        assert done.status == ("timeout" if surface == "console.timeout" else "cancelled")
        party = "stopped by the user" if user else "stopped by the system: "
        assert done.message.startswith(party)
    else:
        complete = setup.log.complete(work_id, timeout=10)
        expected = (
            "interrupted_by_user"
            if user
            else f"interrupted_by_system({SYSTEM_SURFACE[surface].value})"
        )
        assert complete.exit_reason == expected
        assert complete.stop is not None
        assert complete.stop.issuer == ("user" if user else "system")
        if phase in ("tool", "approval"):
            (result,) = setup.log.of_type(ToolComplete)
            if user:
                assert result.content.startswith("stopped by the user")
            else:
                assert result.content.startswith("stopped by the system: ")
                assert "by the user" not in result.content
        if phase == "approval":
            (resolved,) = setup.log.of_type(ApprovalResolved)
            assert resolved.decision == "deny"

    if phase in ("first_byte", "streaming", "console"):
        cut_short(demo_server)
    assert len(demo_server.records.list()) == 1, "a request was sent after the stop"

    report = setup.gateway.shutdown(timeout_s=10)
    assert report.threads_left == []
    assert set(threading.enumerate()) - threads_before == set()
    for pid in pids:  # gone, or a zombie waiting for init to reap it
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
