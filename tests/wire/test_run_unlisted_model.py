"""``desk run --model NAME`` with a model the server does not list is refused before anything
is sent, with the desk's own line, exit 2 (a bad setting), as the full-screen desk refuses it;
a server that lists the model, or lists none, runs it."""

from __future__ import annotations

from pathlib import Path

from tests.desk.test_pty_stop import desk_command
from tests.support import running_demo
from tests.wire.kit import Child

PROMPT = "reply with exactly: hello"


def desk_run(*flags: str) -> tuple[int, str, str]:
    """``desk run FLAGS PROMPT``: its exit status, stdout and stderr."""
    child = Child([*desk_command(), "run", *flags, PROMPT])
    try:
        code = child.wait(120)
        return code, child.out.wait_closed().decode(), child.err.wait_closed().decode()
    finally:
        child.kill()


def test_a_model_the_server_does_not_list_is_refused_with_its_list_and_exit_2() -> None:
    with running_demo(0, model="qwen-small") as server:
        code, out, err = desk_run("--base-url", server.base_url, "--model", "nosuch")
        assert code == 2
        assert out == ""
        assert err == (
            f"desk run: the model server at {server.base_url} does not list model 'nosuch'; "
            "it lists qwen-small\n"
        )
        assert [r.path for r in server.records.list() if "chat" in r.path] == []


def test_json_lines_too_are_refused_before_anything_is_written(tmp_path: Path) -> None:
    with running_demo(0, model="qwen-small") as server:
        db = str(tmp_path / "sessions.db")
        flags = ("--base-url", server.base_url, "--model", "nosuch", "--db", db, "--json")
        code, out, err = desk_run(*flags)
        assert (code, out) == (2, "")
        assert "does not list model 'nosuch'; it lists qwen-small" in err


def test_the_demo_refuses_a_model_it_does_not_list_too() -> None:
    code, out, err = desk_run("--demo", "--model", "nosuch")
    assert (code, out) == (2, "")
    assert "does not list model 'nosuch'; it lists demo" in err


def test_a_listed_model_runs() -> None:
    with running_demo(0, model="qwen-small") as server:
        code, out, err = desk_run("--base-url", server.base_url, "--model", "qwen-small")
        assert (code, out.strip(), err) == (0, "hello", "")
