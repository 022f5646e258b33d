"""Project instructions: the workspace's AGENTS.md (and those above it in its repository) reach
the model in the system message, are counted in the window, and /help names them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.context.instructions import files_named, find_instructions
from agent.provider.client import ProviderConfig
from contract.events import ConsoleComplete, ConsoleOutput, ContextWindowKnown
from demo_model import DemoModelServer
from tests.support import EventLog
from tui_gateway.gateway import Gateway, GatewayConfig


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with instructions at its root, in a package (CLAUDE.md only), and one
    above the repository that is never read."""
    (tmp_path / "AGENTS.md").write_text("outside the repository: never read\n")
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "AGENTS.md").write_text("Run the tests with `make check`.\n")
    (root / "CLAUDE.md").write_text("ignored: AGENTS.md wins in the same directory\n")
    package = root / "pkg"
    package.mkdir()
    (package / "CLAUDE.md").write_text("In pkg, name things in French.\n")
    return package


def test_the_files_are_read_outermost_first_up_to_the_repository_root(repo: Path) -> None:
    found = find_instructions(repo)
    assert found.names(repo) == ["../AGENTS.md", "CLAUDE.md"]
    assert found.text.index("make check") < found.text.index("French")
    assert "never read" not in found.text and "ignored" not in found.text
    assert files_named(found.text) == ["../AGENTS.md", "CLAUDE.md"]


def test_a_workspace_outside_any_repository_reads_only_its_own(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("not a repository above\n")
    workspace = tmp_path / "work"
    workspace.mkdir()
    assert find_instructions(workspace).files == ()
    (workspace / "AGENTS.md").write_bytes(b"mine \xff\n" + b"x" * 100_000)
    found = find_instructions(workspace)
    assert found.names(workspace) == ["AGENTS.md"]
    assert "mine \ufffd" in found.text and len(found.text) < 40_000  # cut, with a note
    assert "left out" in found.text


class Desk:
    def __init__(self, provider: ProviderConfig, workspace: Path, **config: object) -> None:
        self.gateway = Gateway(
            GatewayConfig(provider=provider, approvals=False, cwd=workspace, **config)  # type: ignore[arg-type]
        )
        self.log = EventLog()
        self.gateway.subscribe(self.log)

    def ask(self, session: str, text: str) -> str:
        return self.log.complete(self.gateway.prompt_submit(session, text).turn_id, 60).status

    def used_tokens(self) -> int:
        """What the last ``context.window`` said the next request carries, in tokens."""
        return self.log.of_type(ContextWindowKnown)[-1].used_tokens

    def close(self) -> None:
        assert self.gateway.shutdown(timeout_s=10).threads_left == []


@pytest.fixture
def desk(provider: ProviderConfig, repo: Path) -> Iterator[Desk]:
    d = Desk(provider, repo)
    yield d
    d.close()


def test_a_request_carries_the_instructions_in_its_system_message(
    desk: Desk, demo_server: DemoModelServer, repo: Path
) -> None:
    session = desk.gateway.session_create()
    assert desk.ask(session, "reply with exactly: ok") == "completed"
    (record,) = demo_server.records.list()
    system = record.messages[0]
    assert system["role"] == "system"
    assert "Run the tests with `make check`." in system["content"]
    assert "In pkg, name things in French." in system["content"]
    assert [m["role"] for m in record.messages[1:]] == ["user"]


def test_the_instructions_are_counted_in_the_window(
    provider: ProviderConfig, desk: Desk, repo: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    bare = Desk(provider, elsewhere)
    try:
        assert desk.ask(desk.gateway.session_create(), "reply with exactly: ok") == "completed"
        assert bare.ask(bare.gateway.session_create(), "reply with exactly: ok") == "completed"
        grown = desk.used_tokens() - bare.used_tokens()
        assert grown >= len(find_instructions(repo).text) // 8  # a token is under 8 characters
    finally:
        bare.close()


def test_a_request_that_the_instructions_make_too_large_is_not_sent(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    (tmp_path / "AGENTS.md").write_text("Be thorough. " * 2_000)  # about 26,000 characters
    d = Desk(provider, tmp_path, context_window=2048)
    try:
        session = d.gateway.session_create()
        turn = d.gateway.prompt_submit(session, "reply with exactly: ok").turn_id
        done = d.log.complete(turn, 60)
        assert done.status == "failed" and (done.error or "").startswith("not sent")
        assert not [r for r in demo_server.records.list() if r.path.endswith("completions")]
    finally:
        d.close()


def test_help_names_the_files_read(desk: Desk) -> None:
    session = desk.gateway.session_create()
    command = desk.gateway.console_run(session, "/help")

    def ended(_events: object) -> bool:
        return any(c.command_id == command for c in desk.log.of_type(ConsoleComplete))

    assert desk.log.wait_for(ended, 30)
    said = "".join(e.text for e in desk.log.of_type(ConsoleOutput) if e.command_id == command)
    assert "project instructions read: ../AGENTS.md, CLAUDE.md" in said
