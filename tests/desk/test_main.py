"""The ``desk`` entry point's failures: one line on stderr, exit code 2, no traceback."""

from __future__ import annotations

import socket

import pytest

from desk.__main__ import main


def test_bad_flag_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--escdelay", "never"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("desk: argument --escdelay")
    assert "Traceback" not in err


def test_unreachable_configured_server_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    assert main(["--base-url", f"http://127.0.0.1:{port}/v1"]) == 2
    err = capsys.readouterr().err
    assert (
        err == f"desk: cannot reach the model server at http://127.0.0.1:{port}/v1: "
        "connection refused\n"
    )


def test_help_exits_zero(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    assert "--escdelay" in capsys.readouterr().out
