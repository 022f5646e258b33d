"""Tool calls inside turns: they run, they are approved or denied, and they die with a stop.

The demo model asks for a tool when the prompt says ``call tool NAME with {json}``, and answers
the tool result with text, so these are real round trips on loopback with real processes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from agent.provider.client import ProviderConfig
from agent.stops import StopRequest, Surface
from contract.events import (
    ApprovalRequest,
    ApprovalResolved,
    MessageComplete,
    ToolComplete,
    ToolOutput,
)
from demo_model.server import DemoModelServer
from tests.support import EventLog
from tui_gateway.gateway import Gateway, GatewayConfig


def tool_prompt(command: str) -> str:
    return "call tool shell with " + json.dumps({"command": command})


@pytest.fixture
def run(provider: ProviderConfig, tmp_path: Path) -> Iterator[tuple[Gateway, EventLog, str]]:
    gateway = Gateway(GatewayConfig(provider=provider, approvals=False, cwd=tmp_path))
    log = EventLog()
    gateway.subscribe(log)
    yield gateway, log, gateway.session_create()
    assert gateway.shutdown(timeout_s=5).threads_left == []


def assert_every_call_answered(gateway: Gateway, session: str) -> None:
    history = gateway.history(session)
    asked = [c.id for m in history if m.role == "assistant" for c in m.tool_calls]
    answered = [m.tool_call_id for m in history if m.role == "tool"]
    assert asked == answered


def test_a_shell_call_runs_and_the_model_sees_its_output(
    run: tuple[Gateway, EventLog, str],
) -> None:
    gateway, log, session = run
    turn = gateway.prompt_submit(session, tool_prompt("echo hello-from-desk")).turn_id
    done = log.complete(turn)
    assert done.status == "completed"
    (result,) = log.of_type(ToolComplete)
    assert result.exit_code == 0 and not result.is_error
    assert "hello-from-desk" in result.content
    assert "hello-from-desk" in done.text  # the demo model quotes the tool result
    assert [m.role for m in gateway.history(session)] == ["user", "assistant", "tool", "assistant"]
    assert_every_call_answered(gateway, session)


@pytest.mark.parametrize("who", ["user", "system"])
def test_a_stop_during_a_tool_ends_its_process_group_and_names_who_stopped(
    who: str, run: tuple[Gateway, EventLog, str], demo_server: DemoModelServer
) -> None:
    gateway, log, session = run
    # The child prints its pid, then a grandchild that ignores SIGTERM prints its own.
    command = "echo pid=$$; sh -c 'trap \"\" TERM; echo pid=$$; sleep 30' & wait"
    turn = gateway.prompt_submit(session, tool_prompt(command)).turn_id

    def both_pids(_: object) -> bool:
        return "".join(o.text for o in log.of_type(ToolOutput)).count("pid=") == 2

    assert log.wait_for(both_pids)
    output = "".join(o.text for o in log.of_type(ToolOutput))
    pids = [int(part.split()[0]) for part in output.split("pid=")[1:]]
    if who == "user":
        stop = StopRequest.by_user(Surface.DESK_KEY)
        gateway.session_interrupt(session, stop)
        done = log.complete(turn, timeout=10)
    else:
        gateway.shutdown(timeout_s=10)
        done = log.complete(turn, timeout=0)
    (result,) = log.of_type(ToolComplete)
    if who == "user":
        assert done.exit_reason == "interrupted_by_user"
        assert result.content.startswith("stopped by the user")
        assert result.stopped_by == "stopped by the user"
    else:
        assert done.exit_reason == "interrupted_by_system(gateway.shutdown)"
        assert result.content.startswith("stopped by the system: ")
        assert "the user" not in result.content
    assert result.is_error
    assert done.stop is not None and done.stop.children_ended >= 1
    # The receipt is the tool's: its process and how long it took to go (it ignored SIGTERM,
    # so SIGKILL after the grace), not a connection that was not open.
    assert done.stop.closed_ms is None
    assert done.stop.tool == "shell" and done.stop.tool_pid == pids[0]
    assert done.stop.tool_ended_ms is not None and done.stop.exited_ms is not None
    assert done.stop.tool_ended_ms <= done.stop.exited_ms
    for pid in pids:  # gone, or a zombie waiting for init to reap it
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert_every_call_answered(gateway, session)
    assert len(demo_server.records.list()) == 1  # the stopped tool result was not sent on


def test_approval_once_always_and_deny(provider: ProviderConfig, tmp_path: Path) -> None:
    gateway = Gateway(GatewayConfig(provider=provider, cwd=tmp_path))
    log = EventLog()
    gateway.subscribe(log)
    session = gateway.session_create()
    try:
        decisions = ["deny", "once", "always"]
        for n, decision in enumerate(decisions, start=1):
            turn = gateway.prompt_submit(session, tool_prompt(f"echo run-{n}")).turn_id
            assert log.wait_for(lambda _ev, n=n: len(log.of_type(ApprovalRequest)) == n)
            request = log.of_type(ApprovalRequest)[-1]
            assert request.tool == "shell" and f"run-{n}" in request.arguments
            assert gateway.approval_respond(session, request.request_id, decision)
            done = log.complete(turn)
            assert done.status == "completed"
            result = log.of_type(ToolComplete)[-1]
            if decision == "deny":
                assert result.is_error and "declined" in result.content
            else:
                assert f"run-{n}" in result.content
        # "always" holds for the rest of the session: no new prompt.
        turn = gateway.prompt_submit(session, tool_prompt("echo run-4")).turn_id
        log.complete(turn)
        assert len(log.of_type(ApprovalRequest)) == 3
        assert "run-4" in log.of_type(ToolComplete)[-1].content
        # ...and only for this session.
        other = gateway.session_create()
        gateway.prompt_submit(other, tool_prompt("echo elsewhere"))
        assert log.wait_for(lambda _ev: len(log.of_type(ApprovalRequest)) == 4)
    finally:
        assert gateway.shutdown(timeout_s=5).threads_left == []
    assert_every_call_answered(gateway, session)


def test_a_stop_while_an_approval_is_pending_resolves_it_as_denied(
    provider: ProviderConfig, tmp_path: Path
) -> None:
    gateway = Gateway(GatewayConfig(provider=provider, cwd=tmp_path))
    log = EventLog()
    gateway.subscribe(log)
    try:
        session = gateway.session_create()
        turn = gateway.prompt_submit(session, tool_prompt("touch should-not-exist")).turn_id
        assert log.wait_for(lambda _ev: bool(log.of_type(ApprovalRequest)))
        request = log.of_type(ApprovalRequest)[0]
        gateway.session_interrupt(session, StopRequest.by_user(Surface.DESK_BUTTON))
        done = log.complete(turn)
        assert done.exit_reason == "interrupted_by_user"
        (resolved,) = log.of_type(ApprovalResolved)
        assert resolved.request_id == request.request_id and resolved.decision == "deny"
        assert resolved.reason == "stopped by the user"
        assert not gateway.approval_respond(session, request.request_id, "once")
        assert not (tmp_path / "should-not-exist").exists()
        (result,) = log.of_type(ToolComplete)
        assert result.content.startswith("stopped by the user")
        assert_every_call_answered(gateway, session)
        # The session goes on: the next turn asks again (the stop denied only that call).
        again = gateway.prompt_submit(session, "reply with exactly: fine").turn_id
        assert log.complete(again).text == "fine"
    finally:
        assert gateway.shutdown(timeout_s=5).threads_left == []
    assert isinstance(log.of_type(MessageComplete)[-1], MessageComplete)
