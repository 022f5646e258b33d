"""The ``desk`` entry point's failures: one line on stderr, exit code 2, no traceback (a model
server that cannot be reached is not one: see ``test_pty_startup.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from desk.__main__ import main


def test_bad_flag_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--escdelay", "never"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("desk: argument --escdelay")
    assert "Traceback" not in err


def test_help_exits_zero(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    assert "--escdelay" in capsys.readouterr().out


def test_help_lists_the_shared_settings_flags(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    for flag in ("--base-url", "--model", "--api-key", "--db", "--context-window", "--workspace"):
        assert flag in out
    assert "--demo" in out and "config.toml" in out and "$XDG_DATA_HOME/desk/desk.db" in out


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["--context-window", "many"], "desk: --context-window must be a positive whole number"),
        (["--workspace", "/no/such/dir"], "desk: --workspace must be an existing directory"),
        (["run", "--demo", "--context-window", "0", "hi"], "desk run: --context-window must be"),
    ],
)
def test_a_bad_setting_is_one_line_and_exit_2(
    argv: list[str], line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(line)


def test_a_bad_value_in_the_config_file_names_the_file_and_key(
    config_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = config_home / "desk" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text('theme = "dark"\ncontext_window = 0\n')
    assert main([]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"desk: {path}: context_window must be a positive whole number of tokens (e.g. 8192), "
        "not 0\n"
    )


NICE = "must be a whole number from 0 to 19"


@pytest.mark.parametrize(
    ("argv", "prog"), [(["--demo"], "desk"), (["run", "--demo", "hi"], "desk run")]
)
def test_a_bad_server_nice_from_the_environment_is_refused_before_the_screen(
    argv: list[str],
    prog: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from desk.app import DeskApp

    drawn: list[DeskApp] = []
    monkeypatch.setattr(DeskApp, "run", lambda app: drawn.append(app))  # the screen
    monkeypatch.setenv("DESK_SERVER_NICE", "abc")
    assert main(argv) == 2
    assert drawn == []
    assert capsys.readouterr().err == f"{prog}: DESK_SERVER_NICE {NICE}, not 'abc'\n"


def test_a_bad_server_nice_in_the_config_file_names_the_file_and_key(
    config_home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from desk.app import DeskApp

    path = config_home / "desk" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text("server_nice = 30\n")
    monkeypatch.delenv("DESK_SERVER_NICE")  # the tests' own setting (conftest) would win
    drawn: list[DeskApp] = []
    monkeypatch.setattr(DeskApp, "run", lambda app: drawn.append(app))  # the screen
    assert main(["--demo"]) == 2
    assert drawn == []
    assert capsys.readouterr().err == f"desk: {path}: server_nice {NICE}, not 30\n"


@pytest.mark.parametrize(
    ("argv", "prog"), [(["--demo"], "desk"), (["run", "--demo", "hi"], "desk run")]
)
@pytest.mark.parametrize(("value", "shown"), [('"sometimes"', "'sometimes'"), ("1", "1")])
def test_a_bad_sandbox_in_the_config_file_is_refused_before_the_screen(
    argv: list[str],
    prog: str,
    value: str,
    shown: str,
    config_home: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from desk.app import DeskApp

    path = config_home / "desk" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text(f"sandbox = {value}\n")
    drawn: list[DeskApp] = []
    monkeypatch.setattr(DeskApp, "run", lambda app: drawn.append(app))  # the screen
    assert main(argv) == 2
    assert drawn == []
    assert capsys.readouterr().err == (
        f"{prog}: {path}: sandbox must be one of workspace-write, read-only, off, not {shown}\n"
    )
