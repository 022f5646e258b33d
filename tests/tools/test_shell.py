"""The shell tool on its ordinary paths: output, exit codes, truncation, streaming, timeout."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from agent.tools import ShellRun, ShellTool, ToolResult
from agent.tools.output import cut_marker
from tests.tools.shellkit import Output, context, is_dead, is_running, run


def shell(command: str, cwd: Path, **args: object) -> tuple[ToolResult, Output]:
    output = Output()
    result = run(ShellTool().run({"command": command, **args}, context(cwd, output)))
    return result, output


def test_output_and_exit_code_of_a_failing_command(tmp_path: Path) -> None:
    result, output = shell("echo out; echo err >&2; exit 3", tmp_path)
    assert result.exit_code == 3
    assert result.is_error
    assert result.content == "out\nerr\n[exit code 3]"
    assert output.text == "out\nerr\n"
    assert not result.truncated and result.stopped_by is None and result.children_ended == 0


def test_a_successful_command_is_not_an_error(tmp_path: Path) -> None:
    result, _ = shell("pwd", tmp_path)
    assert result == ToolResult(content=f"{tmp_path}\n", exit_code=0)


def test_a_silent_command_says_so(tmp_path: Path) -> None:
    result, _ = shell("true", tmp_path)
    assert result.content == "(no output)"


def test_stdin_is_empty_so_a_reader_does_not_hang(tmp_path: Path) -> None:
    result, _ = shell("cat; echo after-cat", tmp_path)
    assert result.content == "after-cat\n"


def test_a_signal_death_is_reported_as_a_negative_exit_code(tmp_path: Path) -> None:
    result, _ = shell("kill -KILL $$", tmp_path)
    assert result.exit_code == -9
    assert result.is_error


def test_long_output_keeps_head_and_tail_around_a_marker(tmp_path: Path) -> None:
    output = Output()
    ctx = context(tmp_path, output, max_output_bytes=1_000)
    command = "printf 'HEAD'; head -c 100000 /dev/zero | tr '\\0' x; printf 'TAIL'"
    result = run(ShellTool().run({"command": command}, ctx))
    assert result.truncated
    total = 100_008
    assert result.content == f"HEAD{'x' * 496}\n{cut_marker(total - 1_000)}\n{'x' * 496}TAIL"
    assert "[... 99,008 bytes cut ...]" in result.content
    assert len(output.text) == total  # the live stream is not cut, only the result


def test_utf8_split_across_reads_is_decoded_whole_and_bad_bytes_are_replaced(
    tmp_path: Path,
) -> None:
    # The two halves of "é" (0xC3 0xA9) arrive in separate writes with a pause between them.
    result, output = shell(r"printf 'caf\303'; printf '\251\n'; printf 'bad:\377\n'", tmp_path)
    assert output.text == "café\nbad:\ufffd\n"
    assert result.content == "café\nbad:\ufffd\n"


def test_output_streams_to_the_callback_before_the_command_ends(tmp_path: Path) -> None:
    fifo = tmp_path / "gate"
    os.mkfifo(fifo)

    async def scenario() -> tuple[ToolResult, bool, bool]:
        output = Output()
        run_ = ShellRun(
            f"echo ready; read line < {fifo}; echo got $line",
            cwd=tmp_path,
            on_output=output,
            max_output_bytes=32_000,
        )
        task = asyncio.create_task(run_.run())
        await output.wait_for(r"ready\n")
        assert run_.pid is not None
        still_running = not task.done() and is_running(run_.pid)
        early = "got" not in output.text
        # Opening the FIFO for writing waits for the command's `read` to open it.
        await asyncio.to_thread(fifo.write_text, "go\n")
        return await task, still_running, early

    result, still_running, early = run(scenario())
    assert still_running and early
    assert result.content == "ready\ngot go\n"


def test_commands_run_in_the_context_directory(tmp_path: Path) -> None:
    (tmp_path / "marker.txt").write_text("here")
    result, _ = shell("cat marker.txt", tmp_path)
    assert result.content == "here"


def test_a_missing_working_directory_is_an_error_result(tmp_path: Path) -> None:
    result, _ = shell("true", tmp_path / "missing")
    assert result.is_error
    assert "could not start the command" in result.content
    assert result.exit_code is None


def test_an_empty_command_is_an_error_result(tmp_path: Path) -> None:
    result, _ = shell("  ", tmp_path)
    assert result.is_error and "non-empty" in result.content


def test_background_processes_left_running_are_ended_when_the_command_exits(
    tmp_path: Path,
) -> None:
    output = Output()
    ctx = context(tmp_path, output)
    result = run(ShellTool().run({"command": "sleep 30 & echo $!"}, ctx))
    pid = int(output.text.split()[0])
    assert is_dead(pid)
    assert result.exit_code == 0 and not result.is_error
    assert result.children_ended == 1
    assert "[ended 1 child process still running after the command exited]" in result.content
    assert [e.cause for e in ctx.ledger.endings] == ["leftover"]


def test_a_timeout_ends_the_whole_group_and_says_so(tmp_path: Path) -> None:
    output = Output()
    ctx = context(tmp_path, output)
    tool = ShellTool(grace_s=0.5)
    result = run(
        tool.run({"command": "echo started; sleep 30 & echo $!; wait", "timeout": 0.5}, ctx)
    )
    sleep_pid = int(output.text.split()[1])
    assert result.is_error
    assert result.content.startswith("timed out after 0.5 s; 2 child processes ended")
    assert "started" in result.content
    assert result.exit_code is None and result.stopped_by is None
    assert is_dead(sleep_pid)
    assert result.children_ended == 2
    assert [e.cause for e in ctx.ledger.endings] == ["timeout"]


def test_the_default_timeout_is_ten_minutes() -> None:
    tool = ShellTool()
    assert tool.default_timeout_s == 600.0
    run_ = tool.start({"command": "true"}, context(Path("/")))
    assert run_.timeout_s == 600.0
    assert tool.start({"command": "true", "timeout": 5}, context(Path("/"))).timeout_s == 5.0


def test_a_failing_output_callback_does_not_stall_the_command(tmp_path: Path) -> None:
    def broken(_text: str) -> None:
        raise RuntimeError("listener bug")

    ctx = context(tmp_path)
    ctx.on_output = broken
    result = run(ShellTool().run({"command": "seq 1 20000 | tail -n 1"}, ctx))
    assert result.content == "20000\n"
