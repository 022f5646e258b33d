"""ToolBatch: every tool call of an assistant message gets exactly one result, stop or not."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agent.provider.types import ToolCall
from agent.scope import InterruptScope
from agent.stops import StopRequest, Surface
from agent.tools import ToolBatch, ToolContext, ToolRegistry, ToolResult, default_tools
from tests.tools.shellkit import COOPERATIVE, is_dead, run


@dataclass(frozen=True)
class Exploding:
    """A tool with a bug: it raises."""

    name: str = "explode"
    description: str = "raises"
    parameters: Any = None
    needs_approval: bool = False

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        raise KeyError("boom")


def registry() -> ToolRegistry:
    tools = ToolRegistry(default_tools())
    tools.add(Exploding(parameters={"type": "object"}))
    return tools


def calls(*specs: tuple[str, str]) -> list[ToolCall]:
    return [
        ToolCall(id=f"call_{i}", name=name, arguments=args) for i, (name, args) in enumerate(specs)
    ]


def test_each_call_gets_one_result_in_order_errors_included(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("A")
    batch = ToolBatch(
        registry(),
        calls(
            ("read_file", '{"path": "a.txt"}'),
            ("read_file", '{"path": '),
            ("no_such_tool", "{}"),
            ("explode", "{}"),
            ("shell", '{"command": "echo hi"}'),
        ),
        cwd=tmp_path,
    )
    outcomes = run(batch.run())
    assert [o.call.id for o in outcomes] == [f"call_{i}" for i in range(5)]
    texts = [o.result.content for o in outcomes]
    assert texts[0] == "A"
    assert texts[1].startswith("the arguments are not valid JSON") and "not run" in texts[1]
    assert "no tool named 'no_such_tool'" in texts[2]
    assert texts[3] == "explode failed: KeyError: 'boom'"
    assert texts[4] == "hi\n"
    assert [o.result.is_error for o in outcomes] == [False, True, True, True, False]
    messages = [o.message() for o in outcomes]
    assert [(m.role, m.tool_call_id) for m in messages] == [("tool", f"call_{i}") for i in range(5)]


def test_a_declined_approval_is_an_error_result(tmp_path: Path) -> None:
    seen: list[str] = []

    async def decline(call: ToolCall, args: dict[str, Any], reason: str) -> bool:
        seen.append(call.name)
        return False

    batch = ToolBatch(
        registry(),
        calls(("write_file", '{"path": "x", "content": "y"}'), ("list_dir", "{}")),
        cwd=tmp_path,
        approve=decline,
    )
    outcomes = run(batch.run())
    assert seen == ["write_file"]  # list_dir needs no approval
    assert outcomes[0].result.content == "the person declined to run this write_file call"
    assert not (tmp_path / "x").exists()


def test_a_stop_mid_batch_answers_every_call(tmp_path: Path) -> None:
    stop = StopRequest.by_system(Surface.SESSION_EVICTED, "session evicted")
    streamed: list[tuple[str, str]] = []
    pids_seen = asyncio.Event()

    def on_output(call: ToolCall, text: str) -> None:
        streamed.append((call.id, text))
        if "".join(t for _, t in streamed).count("\n") >= 2:
            pids_seen.set()

    batch = ToolBatch(
        registry(),
        calls(
            ("list_dir", "{}"),
            ("shell", '{"command": "' + COOPERATIVE.replace('"', '\\"') + '"}'),
            ("read_file", '{"path": "never.txt"}'),
        ),
        cwd=tmp_path,
        on_output=on_output,
    )

    async def scenario() -> None:
        task = asyncio.create_task(batch.run())
        await asyncio.wait_for(pids_seen.wait(), 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(scenario())
    outcomes = batch.stopped(stop)
    assert [o.call.id for o in outcomes] == ["call_0", "call_1", "call_2"]
    listed, stopped, not_run = (o.result for o in outcomes)
    assert listed.stopped_by is None and not listed.is_error
    pids = [int(p) for p in "".join(t for _, t in streamed).split()]
    assert all(is_dead(pid) for pid in pids)
    assert stopped.stopped_by is stop and stopped.children_ended == 2
    assert stopped.content.startswith(
        "stopped by the system: session evicted (2 child processes ended)\n\n"
        "partial output before the stop:\n"
    )
    assert stopped.content.endswith(f"{pids[0]}\n{pids[1]}\n")
    assert not_run.content == "not run: stopped by the system: session evicted"
    assert batch.ledger.children_ended == 2


def test_a_stop_wakes_a_pending_approval(tmp_path: Path) -> None:
    asked = asyncio.Event()

    async def never_answers(call: ToolCall, args: dict[str, Any], reason: str) -> bool:
        asked.set()
        await asyncio.Event().wait()
        return True

    batch = ToolBatch(
        registry(), calls(("shell", '{"command": "echo no"}')), cwd=tmp_path, approve=never_answers
    )

    async def scenario() -> None:
        task = asyncio.create_task(batch.run())
        await asyncio.wait_for(asked.wait(), 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(scenario())
    [outcome] = batch.stopped(StopRequest.by_user(Surface.DESK_BUTTON))
    assert outcome.result.content == "stopped by the user"


@dataclass(frozen=True)
class BadPath:
    """A tool whose path check has a bug: naming its path raises."""

    name: str = "bad_path"
    description: str = "its path_argument raises"
    parameters: Any = None
    needs_approval: bool = False

    def path_argument(self, args: dict[str, Any]) -> str:
        raise RuntimeError("no home")

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return ToolResult(content="ran")


def test_a_bug_in_a_call_s_checks_answers_the_call_and_the_next_runs(tmp_path: Path) -> None:
    tools = ToolRegistry(default_tools())
    tools.add(BadPath(parameters={"type": "object"}))
    batch = ToolBatch(
        tools,
        calls(("bad_path", "{}"), ("shell", '{"command": "echo after"}')),
        cwd=tmp_path,
    )
    outcomes = run(batch.run())
    assert [o.result.content for o in outcomes] == [
        "bad_path failed: RuntimeError: no home",
        "after\n",
    ]
    assert outcomes[0].result.is_error and not outcomes[1].result.is_error


@dataclass(frozen=True)
class AnswersItsStop:
    """A tool that returns a result once its scope is cancelled (as ``delegate`` returns its
    stopped child's outcome)."""

    name: str = "wait_for_the_child"
    description: str = "waits until stopped"
    parameters: Any = None
    needs_approval: bool = False

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        assert ctx.stops is not None
        ctx.stops.cancel(StopRequest.by_user(Surface.DESK_KEY))  # the stop lands while it runs
        return ToolResult(content="the child was stopped")


def test_no_call_starts_after_one_that_answered_the_stop(tmp_path: Path) -> None:
    # the turn's cancel had not reached the loop: the next call of the message started
    (tmp_path / "a.txt").write_text("A")
    tools = registry()
    tools.add(AnswersItsStop(parameters={"type": "object"}))
    scope = InterruptScope("turn")
    batch = ToolBatch(
        tools,
        calls(("wait_for_the_child", "{}"), ("read_file", '{"path": "a.txt"}')),
        cwd=tmp_path,
        stops=scope,
    )
    with pytest.raises(asyncio.CancelledError):
        run(batch.run())
    stop = scope.stop
    assert stop is not None
    answered, not_run = (o.result for o in batch.stopped(stop))
    assert answered.content == "the child was stopped"
    assert not_run.content == "not run: stopped by the user"
    stopped = batch.stopped_tool(stop)
    assert stopped is not None and stopped.name == "wait_for_the_child"
