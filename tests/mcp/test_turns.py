"""MCP tools inside real turns: a real published server answers, a stop cancels the request and
ends the turn at once, a crashed or broken server gives the model a readable error and the next
turn works, approvals and timeouts hold.

The demo model calls a tool when the prompt says ``call tool NAME with {json}`` and then quotes
the result's first line, so each of these is a real round trip: demo model, gateway, MCP loop,
the server's process and back.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from agent.stops import StopRequest, Surface
from contract.events import (
    ApprovalRequest,
    ConsoleComplete,
    ConsoleOutput,
    GatewayEvent,
    MessageComplete,
    ToolComplete,
    ToolStart,
)
from contract.mcp_events import McpServerChanged
from tests.mcp.conftest import McpRig
from tests.support import EventLog


def call(tool: str, **arguments: Any) -> str:
    return f"call tool {tool} with {json.dumps(arguments)}"


def result_of(rig: McpRig, turn_id: str) -> ToolComplete:
    (result,) = [p for p in rig.log.of_type(ToolComplete) if p.turn_id == turn_id]
    return result


def run(rig: McpRig, prompt: str, timeout: float = 30.0) -> tuple[MessageComplete, ToolComplete]:
    session = rig.gateway.session_create()
    turn = rig.gateway.prompt_submit(session, prompt).turn_id
    done = rig.log.complete(turn, timeout=timeout)
    return done, result_of(rig, turn)


def test_the_published_time_server_answers_a_turn(mcp_rig: McpRig) -> None:
    done, result = run(mcp_rig, call("mcp__time__get_current_time", timezone="Europe/Paris"))
    assert done.status == "completed"
    assert not result.is_error, result.content
    answer = json.loads(result.content)
    assert answer["timezone"] == "Europe/Paris"
    assert re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", answer["datetime"])
    # get_current_time is flagged readOnlyHint and the server allows read-only tools: no prompt
    assert not [p for p in mcp_rig.log.of_type(ApprovalRequest) if p.tool.endswith("time")]


@pytest.mark.parametrize("tool", ["slow", "stubborn"])
def test_a_stop_during_an_mcp_call_cancels_it_and_ends_the_turn(mcp_rig: McpRig, tool: str) -> None:
    gateway, log, witness = mcp_rig.gateway, mcp_rig.log, mcp_rig.witness
    session = gateway.session_create()
    arguments = {"seconds": 600} if tool == "slow" else {}
    mark = witness.mark
    turn = gateway.prompt_submit(session, call(f"mcp__test__{tool}", **arguments)).turn_id
    called = witness.wait_event("call", tool=tool, since=mark)
    stop = StopRequest.by_user(Surface.DESK_KEY)
    gateway.session_interrupt(session, stop, turn_id=turn)
    done = log.complete(turn, timeout=10)
    assert done.exit_reason == "interrupted_by_user"
    assert result_of(mcp_rig, turn).content.startswith("stopped by the user")
    # The server was told: notifications/cancelled for that very request.
    seen = "cancelled" if tool == "slow" else "cancel_ignored"
    witness.wait_event(seen, since=mark, request=called["request"], pid=called["pid"])
    # A server still busy with the ignored call answers the next one.
    done, result = run(mcp_rig, call("mcp__test__echo", text=f"after {tool}"))
    assert done.status == "completed" and result.content == f"after {tool}"


def test_a_crash_mid_call_is_one_clear_line_and_the_next_turn_works(mcp_rig: McpRig) -> None:
    log = mcp_rig.log
    failed_before = len([p for p in log.of_type(McpServerChanged) if p.state == "failed"])
    done, result = run(mcp_rig, call("mcp__test__crash", code=3))
    assert done.status == "completed"  # the turn is not failed for it
    assert result.is_error
    line = "mcp: test failed: exited with code 3: RuntimeError: crashing on purpose with code 3"
    assert result.content == line
    failures = [p for p in log.of_type(McpServerChanged) if p.state == "failed"]
    assert len(failures) == failed_before + 1 and failures[-1].line == line
    # The next call starts the server again.
    done, result = run(mcp_rig, call("mcp__test__echo", text="back"))
    assert done.status == "completed" and result.content == "back"


def test_a_line_that_is_not_json_rpc_fails_the_server_not_the_turn(mcp_rig: McpRig) -> None:
    done, result = run(mcp_rig, call("mcp__test__garbage"))
    assert done.status == "completed" and result.is_error
    assert result.content == (
        "mcp: test failed: sent a line that is not a JSON-RPC message: 'this is not json'"
    )
    done, result = run(mcp_rig, call("mcp__test__echo", text="still here"))
    assert result.content == "still here"


def test_lone_surrogates_in_an_answer_reach_the_model_as_replacement_characters(
    mcp_rig: McpRig,
) -> None:
    """JSON may escape a lone surrogate; the SDK's parser refuses the line, desk reads it as
    valid text instead of dropping the server."""
    done, result = run(mcp_rig, call("mcp__test__surrogates"))
    assert done.status == "completed" and not result.is_error
    assert result.content == "before \ufffd between \ufffd after"
    assert result.content in done.text  # the demo model quotes it: it was sent on
    done, result = run(mcp_rig, call("mcp__test__echo", text="still here"))
    assert result.content == "still here"


def test_a_large_answer_is_cut_like_shell_output(mcp_rig: McpRig) -> None:
    done, result = run(mcp_rig, call("mcp__test__large", size=200_000))
    assert done.status == "completed" and not result.is_error
    assert result.content.startswith("HEAD\x1b[2J\x07y")  # the model gets what the server said
    assert result.content.endswith("yTAIL")
    assert "bytes cut ...]" in result.content
    assert len(result.content.encode()) < 33_000


def asked(rig: McpRig, turn_id: str) -> ApprovalRequest:
    """The turn's approval prompt, waited for."""

    def seen(events: list[GatewayEvent]) -> bool:
        return any(
            isinstance(e.payload, ApprovalRequest) and e.payload.turn_id == turn_id for e in events
        )

    assert rig.log.wait_for(seen, 20), f"turn {turn_id} asked for no approval"
    (request,) = [p for p in rig.log.of_type(ApprovalRequest) if p.turn_id == turn_id]
    return request


def test_the_tool_timeout_ends_a_call_as_a_tool_error(mcp_rig: McpRig) -> None:
    gateway, log, witness = mcp_rig.gateway, mcp_rig.log, mcp_rig.witness
    session = gateway.session_create()
    mark = witness.mark
    turn = gateway.prompt_submit(session, call("mcp__tight__slow", seconds=600)).turn_id
    request = asked(mcp_rig, turn)
    assert request.tool == "mcp__tight__slow"
    gateway.approval_respond(session, request.request_id, "once")
    called = witness.wait_event("call", tool="slow", since=mark)
    done = log.complete(turn, timeout=20)
    assert done.status == "completed"
    result = result_of(mcp_rig, turn)
    assert result.is_error
    assert result.content.startswith("mcp__tight__slow timed out after 1 s")
    witness.wait_event("cancelled", since=mark, request=called["request"], pid=called["pid"])


def test_approval_ask_once_always_and_deny_for_mcp_tools(mcp_rig: McpRig) -> None:
    gateway, log = mcp_rig.gateway, mcp_rig.log
    session = gateway.session_create()
    results = []
    prompts = 0
    for decision in ("deny", "always", None):  # None: "always" holds, nothing is asked
        turn = gateway.prompt_submit(session, call("mcp__tight__slow", seconds=0)).turn_id
        if decision is not None:
            gateway.approval_respond(session, asked(mcp_rig, turn).request_id, decision)
            prompts += 1
        log.complete(turn, timeout=20)
        results.append(result_of(mcp_rig, turn))
    assert results[0].is_error and "declined" in results[0].content
    assert [r.content for r in results[1:]] == ["slept 0 s", "slept 0 s"]
    turns = {p.turn_id for p in log.of_type(ToolComplete) if p in results}
    assert len([p for p in log.of_type(ApprovalRequest) if p.turn_id in turns]) == prompts == 2


def test_a_read_only_tool_runs_unasked_when_the_server_allows_it(mcp_rig: McpRig) -> None:
    done, result = run(mcp_rig, call("mcp__tight__echo", text="no prompt"))
    assert result.content == "no prompt"
    starts = [p for p in mcp_rig.log.of_type(ToolStart) if p.turn_id == done.turn_id]
    assert [p.name for p in starts] == ["mcp__tight__echo"]


def test_a_server_that_fails_to_start_is_listed_failed_and_offers_no_tools(
    mcp_rig: McpRig,
) -> None:
    gateway = mcp_rig.gateway
    (broken,) = [s for s in gateway.mcp.statuses() if s.name == "broken"]
    assert broken.state == "failed"
    assert broken.message == "exited with code 1: error: this server was told not to start"
    names = {tool.name for tool in gateway.mcp.tools()}
    assert "mcp__time__get_current_time" in names
    assert not [name for name in names if name.startswith("mcp__broken__")]
    done, result = run(mcp_rig, call("mcp__broken__echo", text="x"))
    assert done.status == "completed" and result.is_error
    assert "there is no tool named 'mcp__broken__echo'" in result.content


def console(rig: McpRig, line: str, timeout: float = 60.0) -> tuple[ConsoleComplete, str]:
    """Run a console command line in a new session; its outcome and output."""
    command = rig.gateway.console_run(rig.gateway.session_create(), line)

    def done(events: list[GatewayEvent]) -> bool:
        return any(
            isinstance(e.payload, ConsoleComplete) and e.payload.command_id == command
            for e in events
        )

    assert rig.log.wait_for(done, timeout)
    (complete,) = [p for p in rig.log.of_type(ConsoleComplete) if p.command_id == command]
    text = "".join(p.text for p in rig.log.of_type(ConsoleOutput) if p.command_id == command)
    return complete, text


def test_the_mcp_command_lists_servers_states_and_tools(mcp_rig: McpRig) -> None:
    complete, text = console(mcp_rig, "/mcp")
    assert complete.status == "ok"
    lines = {line.split()[0]: line for line in text.splitlines()}
    assert list(lines) == ["test", "tight", "time", "broken", "closed"]
    assert lines["time"].split()[1:3] == ["ready", "stdio"]
    assert "2 tools: mcp__time__get_current_time, mcp__time__convert_time" in lines["time"]
    assert lines["broken"].split()[1] == "failed"
    assert lines["broken"].endswith("exited with code 1: error: this server was told not to start")


def test_mcp_restart_starts_a_server_again(mcp_rig: McpRig) -> None:
    mark = mcp_rig.witness.mark
    complete, text = console(mcp_rig, "/mcp restart tight")
    assert complete.status == "ok", complete.message
    assert text.startswith("restarting tight...\n")
    assert text.splitlines()[-1].split()[:2] == ["tight", "ready"]
    mcp_rig.witness.wait_event("started", since=mark, name="tight")  # a new process
    complete, _ = console(mcp_rig, "/mcp restart broken")
    assert complete.status == "error"
    assert complete.message == (
        "mcp: broken failed: exited with code 1: error: this server was told not to start"
    )
    complete, _ = console(mcp_rig, "/mcp restart nowhere")
    assert complete.status == "error" and "there is no MCP server 'nowhere'" in complete.message


def test_approval_never_refuses_without_asking(mcp_rig: McpRig) -> None:
    mark = mcp_rig.witness.mark
    done, result = run(mcp_rig, call("mcp__closed__echo", text="x"))
    assert done.status == "completed" and result.is_error
    assert 'approval = "never"' in result.content
    assert not [p for p in mcp_rig.log.of_type(ApprovalRequest) if p.turn_id == done.turn_id]
    assert [e for e in mcp_rig.witness.events[mark:] if e["event"] == "call"] == []


def test_a_subscriber_that_comes_later_learns_each_servers_state_first(mcp_rig: McpRig) -> None:
    late = EventLog()
    subscription = mcp_rig.gateway.subscribe(late)
    try:
        assert late.wait_for(lambda ev: len(ev) >= 5)
        first = [e.payload for e in late.events[:5]]
        assert all(isinstance(p, McpServerChanged) for p in first)
        states = {p.name: p.state for p in first if isinstance(p, McpServerChanged)}
        assert states == {s.name: s.state for s in mcp_rig.gateway.mcp.statuses()}
    finally:
        mcp_rig.gateway.unsubscribe(subscription)
