"""The sandboxed shell: under workspace-write a command writes inside the workspace and nowhere
else (a file it writes in the system temp folder never appears there), secrets are hidden, the
network is cut, and a stop ends a sandboxed command like an unsandboxed one."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

from agent import sandbox_init
from agent.tools import ShellTool
from agent.tools.sandbox import Sandbox, bwrap_problem, choose_mode
from tests.tools.shellkit import Output, context, is_dead, run

pytestmark = pytest.mark.skipif(bwrap_problem() is not None, reason=str(bwrap_problem()))

WRITE = Sandbox("workspace-write", hidden=())


def shell(command: str, cwd: Path, sandbox: Sandbox = WRITE) -> tuple[str, bool]:
    output = Output()
    result = run(ShellTool(sandbox=sandbox).run({"command": command}, context(cwd, output)))
    return result.content, result.is_error


def last_line(said: str) -> str:
    """The command's last line of output, the result's notes in brackets left out (bwrap's
    own init may outlive the command a moment, and be ended with a note)."""
    return [line for line in said.strip().splitlines() if not line.startswith("[")][-1]


def test_workspace_write_writes_inside_the_workspace_and_nowhere_else(tmp_path: Path) -> None:
    workspace = tmp_path / "work"
    workspace.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    in_temp = Path(tempfile.gettempdir()) / f"desk-sandbox-{uuid.uuid4().hex}"
    command = (
        f"echo kept > inside.txt && echo temp > {in_temp} && cat {in_temp}; "
        f"echo lost > {outside}/x.txt || echo refused"
    )
    said, _error = shell(command, workspace)
    assert (workspace / "inside.txt").read_text() == "kept\n"
    assert "temp" in said  # the command had its own temp folder...
    assert not in_temp.exists()  # ...which never reached the host's
    assert "refused" in said and not (outside / "x.txt").exists()


def test_read_only_writes_nowhere(tmp_path: Path) -> None:
    said, _error = shell("echo x > f.txt || echo refused", tmp_path, Sandbox("read-only"))
    assert "refused" in said and not (tmp_path / "f.txt").exists()


def test_the_deny_list_is_hidden_and_the_network_cut(tmp_path: Path) -> None:
    secrets = tmp_path / "home" / ".ssh"
    secrets.mkdir(parents=True)
    (secrets / "id_ed25519").write_text("PRIVATE KEY")
    workspace = tmp_path / "work"
    workspace.mkdir()
    sandbox = Sandbox("workspace-write", hidden=(secrets,))
    said, _error = shell(f"cat {secrets}/id_ed25519 || echo hidden", workspace, sandbox)
    assert "PRIVATE" not in said and "hidden" in said
    with socket.create_server(("127.0.0.1", 0)) as server:  # a server on the host
        port = server.getsockname()[1]
        connect = f"import socket; socket.create_connection(('127.0.0.1', {port}), 2)"
        # The base interpreter: a virtual environment under /tmp is not in the sandbox (its
        # /tmp is private), and "not found" would pass for "cut".
        python = Path(sys.base_prefix) / "bin" / "python3"
        reach = f'{python} -c "{connect}"'
        said, _error = shell(f"{reach} && echo reached || echo cut", workspace)
        assert last_line(said) == "cut"
        allowed = Sandbox("workspace-write", network=True)
        said, _error = shell(f"{reach} && echo reached || echo cut", workspace, allowed)
        assert last_line(said) == "reached"


def test_a_stop_ends_a_sandboxed_sleep_and_everything_in_it(tmp_path: Path) -> None:
    async def go() -> tuple[list[int], bool, int]:
        output = Output()
        tool = ShellTool(grace_s=0.5, sandbox=WRITE)
        started = tool.start({"command": "sleep 60 & echo $$; wait"}, context(tmp_path, output))
        task = asyncio.create_task(started.run())
        await output.wait_for(r"\d+")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return [started.group or 0], started.stopped, started.children_ended

    groups, stopped, ended = run(go())
    assert stopped and all(is_dead(pid) for pid in groups)
    assert ended == 2  # the shell and its sleep, not the sandbox's own processes
    assert not any(_sleeps_in(tmp_path))


def test_what_a_sandboxed_command_left_running_is_ended_and_counted_as_outside(
    tmp_path: Path,
) -> None:
    command = "sleep 60 & sleep 60 & (setsid sh -c 'sleep 60 & exit 0' &); echo started"
    counts = {}
    for sandbox in (Sandbox(), WRITE):
        output = Output()
        result = run(
            ShellTool(sandbox=sandbox).run({"command": command}, context(tmp_path, output))
        )
        assert result.content.startswith("started\n"), result.content
        counts[sandbox.mode] = (result.children_ended, result.content.splitlines()[-1])
    assert (
        counts["workspace-write"]
        == counts["off"]
        == (
            3,
            "[ended 3 child processes still running after the command exited]",
        )
    )
    assert not any(_sleeps_in(tmp_path))


def _sleeps_in(cwd: Path) -> list[int]:
    """Processes still running ``sleep 60`` whose working directory is ``cwd``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if (entry / "cmdline").read_bytes() == b"sleep\x0060\x00" and os.readlink(
                entry / "cwd"
            ) == str(cwd.resolve()):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def test_the_mode_is_chosen_from_the_setting_and_what_works_here() -> None:
    assert choose_mode(None) == ("workspace-write", "")
    assert choose_mode("off") == ("off", "")
    mode, line = choose_mode(None, bwrap="no-such-bwrap")
    assert (
        mode == "off"
        and line == "shell runs without a sandbox: bubblewrap (bwrap) is not installed"
    )
    with pytest.raises(ValueError, match="sandbox must be one of"):
        choose_mode("sometimes")


@pytest.mark.parametrize("bound", [True, False])
def test_the_sandbox_s_first_process_kept_under_tmp_is_bound_in_for_it(
    tmp_path: Path, bound: bool
) -> None:
    # A checkout (or its virtual environment) under /tmp: the sandbox's fresh /tmp hides it,
    # unless what the first process needs is bound back in, read-only, at the same path.
    script = tmp_path / "sandbox_init.py"
    shutil.copy(sandbox_init.__file__, script)
    status_read, status_write = os.pipe()
    init = [sys.executable, "-I", "-S", str(script), str(status_write), "--"]
    own = os.path.abspath(sandbox_init.__file__)
    paths = [p for p in sandbox_init.needed_paths() if p != own] + [str(script)]
    workspace = tmp_path / "work"
    workspace.mkdir()
    argv = WRITE.wrap(["/bin/sh", "-c", "echo inside"], workspace, init, paths if bound else ())
    try:
        done = subprocess.run(argv, capture_output=True, pass_fds=(status_write,), timeout=60)
    finally:
        os.close(status_write)
        said = os.read(status_read, 100)
        os.close(status_read)
    if bound:
        assert (done.stdout, said) == (b"inside\n", b"exit 0\n")
    else:
        assert done.returncode != 0 and done.stdout == b""  # the first process was not there
