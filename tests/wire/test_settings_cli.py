"""Every wire command reads the shared settings: flags, then the environment, then
``$XDG_CONFIG_HOME/desk/config.toml`` (``XDG_CONFIG_HOME`` a fresh directory per test); a bad
value is one line on stderr and exit 2.

The commands that run a turn or serve run as child processes; a refusal, which comes before
anything starts, runs the same entry point (``python -m tui_gateway.wire``'s ``main``) in this
process, the environment and config file being this test's.
"""

from __future__ import annotations

import re
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from agent.store import open_store
from demo_model.server import DemoModelServer
from tests.wire.kit import SETTINGS_VARIABLES, Child, RawStdio
from tui_gateway.wire.__main__ import main as wire_main
from tui_gateway.wire.cli import main_gateway_stdio, main_run, main_serve

SHARED_FLAGS = (
    "--base-url",
    "--model",
    "--api-key",
    "--db",
    "--context-window",
    "--workspace",
    "--demo",
)


def wire(command: str, *args: str) -> list[str]:
    """``python -m tui_gateway.wire COMMAND ARGS`` with no settings flag of its own."""
    return [sys.executable, "-m", "tui_gateway.wire", command, *args]


EXIT_S = 60.0
"""How long a child may take to exit: a deadline for a stuck one, never a speed test (a
loaded machine takes seconds to start Python and import the gateway)."""


@pytest.fixture
def no_settings_variables(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """This process's environment without the settings' variables (as a child gets it)."""
    for name in SETTINGS_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def write_config(config_home: Path, text: str) -> Path:
    path = config_home / "desk" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_run_takes_every_setting_from_the_config_file(
    demo_server: DemoModelServer, config_home: Path, tmp_path: Path
) -> None:
    demo_server.configure(model="file-model")  # lists it: desk run refuses a model not listed
    work, db = tmp_path / "work", tmp_path / "sessions.db"
    work.mkdir()
    write_config(
        config_home,
        f'base_url = "{demo_server.base_url}"\nmodel = "file-model"\ndb = "{db}"\n'
        f'workspace = "{work}"\ncontext_window = 8192\n# a comment\ntheme = "light"\n',
    )
    child = Child(wire("run", "reply with exactly: read from the file"))
    assert child.wait(EXIT_S) == 0, child.err.text
    assert child.out.wait_closed() == b"read from the file\n"
    assert child.err.wait_closed() == b""
    assert [r.model for r in demo_server.records.list()] == ["file-model"]
    store = open_store(db)
    try:
        [row] = store.sessions.list_sessions()
        assert row.cwd == str(work)
    finally:
        store.close()


@pytest.mark.parametrize(
    ("flag", "env", "expected"),
    [(False, False, "file-model"), (False, True, "env-model"), (True, True, "flag-model")],
    ids=["file", "env-over-file", "flag-over-env"],
)
def test_run_flag_over_environment_over_file(
    demo_server: DemoModelServer, config_home: Path, flag: bool, env: bool, expected: str
) -> None:
    demo_server.configure(model=expected)  # lists it: desk run refuses a model not listed
    write_config(config_home, f'base_url = "{demo_server.base_url}"\nmodel = "file-model"\n')
    args = ["--model", "flag-model"] if flag else []
    child = Child(
        wire("run", *args, "reply with exactly: ok"),
        env={"DESK_MODEL": "env-model"} if env else None,
    )
    assert child.wait(EXIT_S) == 0, child.err.text
    assert child.out.wait_closed() == b"ok\n"
    assert [r.model for r in demo_server.records.list()] == [expected]


def test_serve_reads_the_config_file(
    demo_server: DemoModelServer, config_home: Path, tmp_path: Path
) -> None:
    write_config(config_home, f'base_url = "{demo_server.base_url}"\nmodel = "file-model"\n')
    token_file = tmp_path / "token"
    child = Child(wire("serve", "--port", "0", "--token-file", str(token_file)))
    try:
        assert child.out.wait_for(lambda data: b"listening on" in data, EXIT_S), child.err.text
        assert re.search(r"listening on http://\S+ \(model file-model\)", child.out.text)
        child.proc.send_signal(signal.SIGINT)
        assert child.wait(EXIT_S) == 0
    finally:
        child.kill()


def test_the_gateway_reads_the_config_file_and_a_flag_wins(
    demo_server: DemoModelServer, config_home: Path
) -> None:
    write_config(config_home, f'base_url = "{demo_server.base_url}"\nmodel = "file-model"\n')
    for args, model in (((), "file-model"), (("--model", "flag-model"), "flag-model")):
        raw = RawStdio(wire("gateway", "--stdio", *args))
        try:
            ready = raw.wait_message(lambda m: m.get("method") == "gateway.ready", EXIT_S)
            assert ready is not None
            assert ready["params"]["model"] == model
            assert ready["params"]["base_url"] == demo_server.base_url
            stdin = raw.child.proc.stdin
            assert stdin is not None
            stdin.close()  # the frontend goes away: the gateway exits 0
            assert raw.child.wait(EXIT_S) == 0
        finally:
            raw.child.kill()


@pytest.mark.parametrize("command", ["run", "serve", "gateway"])
def test_a_bad_value_in_the_file_is_one_line_and_exit_2(
    demo_server: DemoModelServer,
    config_home: Path,
    command: str,
    no_settings_variables: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = write_config(
        config_home, f'base_url = "{demo_server.base_url}"\ncontext_window = "big"\n'
    )
    extra = {"run": ["hello"], "serve": ["--port", "0"], "gateway": ["--stdio"]}[command]
    assert wire_main([command, *extra]) == 2
    out, err = capsys.readouterr()
    [line] = err.splitlines()
    assert line == (
        f"desk {command}: {path}: context_window must be a positive whole number of tokens "
        "(e.g. 8192), not 'big'"
    )
    assert out == ""
    assert demo_server.records.list() == []


@pytest.mark.parametrize(
    ("args", "env", "named"),
    [
        (["--context-window", "0"], {}, "--context-window"),
        ([], {"DESK_CONTEXT_WINDOW": "lots"}, "DESK_CONTEXT_WINDOW"),
        (["--workspace", "/no/such/dir"], {}, "--workspace"),
        ([], {"OPENAI_BASE_URL": "127.0.0.1:8080"}, "OPENAI_BASE_URL"),
    ],
)
def test_a_bad_flag_or_variable_is_one_line_and_exit_2(
    demo_server: DemoModelServer,
    args: list[str],
    env: dict[str, str],
    named: str,
    no_settings_variables: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name, value in env.items():
        no_settings_variables.setenv(name, value)
    server = [] if "OPENAI_BASE_URL" in env else ["--base-url", demo_server.base_url]
    assert wire_main(["run", *server, *args, "hello"]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"desk run: {named} must be ")
    assert demo_server.records.list() == []


def test_a_config_file_that_is_not_toml_stops_serve_with_one_line(
    config_home: Path, no_settings_variables: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_config(config_home, "model = \n")
    assert wire_main(["serve", "--demo", "--port", "0"]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"desk serve: {path} is not valid TOML: ")


@pytest.mark.parametrize("main", [main_run, main_serve, main_gateway_stdio])
def test_help_lists_the_shared_settings_flags(
    main: Callable[[Sequence[str]], int], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    for flag in SHARED_FLAGS:
        assert flag in out
    assert "config.toml" in out and "DESK_CONTEXT_WINDOW" in out
