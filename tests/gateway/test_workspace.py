"""The file tools' workspace boundary, through the gateway against the demo model.

Inside the workspace ``read_file`` and ``list_dir`` run without asking; outside they ask with
the resolved path shown; the deny list is refused even when the person allowed the tool always.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.provider.client import ProviderConfig
from contract.events import ApprovalRequest, ToolComplete
from demo_model.server import DemoModelServer
from tests.support import EventLog
from tui_gateway.gateway import Gateway, GatewayConfig


def call(tool: str, **args: str) -> str:
    return f"call tool {tool} with " + json.dumps(args)


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A home with secrets, a workspace in it, and a folder outside the workspace."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text("aws_secret_access_key = x\n")
    workspace = home / "project"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("inside the workspace\n")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "public.txt").write_text("outside the workspace\n")
    (workspace / "link-out").symlink_to(outside / "public.txt")
    (workspace / "link-key").symlink_to(home / ".ssh" / "id_ed25519")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    return {"home": home, "workspace": workspace, "outside": outside}


@pytest.fixture
def run(
    provider: ProviderConfig, places: dict[str, Path]
) -> Iterator[tuple[Gateway, EventLog, str]]:
    db = places["home"] / "elsewhere.db"
    config = GatewayConfig(provider=provider, cwd=places["workspace"], denied_paths=(db,))
    gateway = Gateway(config)
    log = EventLog()
    gateway.subscribe(log)
    yield gateway, log, gateway.session_create()
    assert gateway.shutdown(timeout_s=5).threads_left == []


def ask(log: EventLog, count: int) -> ApprovalRequest:
    assert log.wait_for(lambda _e: len(log.of_type(ApprovalRequest)) >= count)
    return log.of_type(ApprovalRequest)[count - 1]


def test_reads_and_listings_inside_the_workspace_need_no_approval(
    run: tuple[Gateway, EventLog, str],
) -> None:
    gateway, log, session = run
    for prompt in (call("read_file", path="notes.txt"), call("list_dir", path=".")):
        done = log.complete(gateway.prompt_submit(session, prompt).turn_id)
        assert done.status == "completed"
    read, listed = log.of_type(ToolComplete)
    assert read.content == "inside the workspace\n" and not read.is_error
    assert "notes.txt" in listed.content
    assert log.of_type(ApprovalRequest) == []


def test_a_read_outside_asks_first_naming_the_resolved_path(
    run: tuple[Gateway, EventLog, str], places: dict[str, Path]
) -> None:
    gateway, log, session = run
    outside = places["outside"] / "public.txt"
    cases = [
        ("../../elsewhere/public.txt", "deny"),  # `..` resolved
        ("link-out", "once"),  # a link inside that points outside
    ]
    for n, (path, decision) in enumerate(cases, start=1):
        turn = gateway.prompt_submit(session, call("read_file", path=path)).turn_id
        request = ask(log, n)
        assert request.tool == "read_file"
        assert request.reason == (
            f"read_file on {outside}, outside the workspace {places['workspace']}"
        )
        gateway.approval_respond(session, request.request_id, decision)
        log.complete(turn)
    declined, read = log.of_type(ToolComplete)
    assert declined.is_error and "declined" in declined.content
    assert read.content == "outside the workspace\n"


def test_write_file_asks_inside_the_workspace_too(run: tuple[Gateway, EventLog, str]) -> None:
    gateway, log, session = run
    turn = gateway.prompt_submit(session, call("write_file", path="new.txt", content="x")).turn_id
    request = ask(log, 1)
    assert request.tool == "write_file" and request.reason == ""
    gateway.approval_respond(session, request.request_id, "deny")
    log.complete(turn)


@pytest.mark.parametrize(
    "path",
    [
        "~/.ssh/id_ed25519",
        "link-key",  # a link inside the workspace to a private key
        "~/.aws/credentials",
        "/etc/shadow",
        "/etc/sudoers",
        "~/elsewhere.db-wal",  # the host's own database, named in denied_paths
        "~/elsewhere.db-prompts",  # and its prompt history
        "~/.config/desk/token",
        "~/.local/share/desk/desk.db",
    ],
)
def test_the_deny_list_is_refused_even_when_allowed_always(
    path: str,
    run: tuple[Gateway, EventLog, str],
    places: dict[str, Path],
    demo_server: DemoModelServer,
) -> None:
    gateway, log, session = run
    # The person allows read_file always, on a read outside the workspace...
    first = gateway.prompt_submit(session, call("read_file", path="../../elsewhere/public.txt"))
    gateway.approval_respond(session, ask(log, 1).request_id, "always")
    log.complete(first.turn_id)
    # ...and the model then asks for a secret: refused, with no prompt, in words it can read.
    done = log.complete(gateway.prompt_submit(session, call("read_file", path=path)).turn_id)
    assert done.status == "completed"
    assert len(log.of_type(ApprovalRequest)) == 1
    refused = log.of_type(ToolComplete)[-1]
    assert refused.is_error
    assert refused.content.startswith("read_file refused: ") and "deny list" in refused.content
    assert "PRIVATE KEY" not in refused.content and "aws_secret" not in refused.content
    sent = json.dumps(demo_server.records.list()[-1].messages)
    assert "read_file refused" in sent and "PRIVATE KEY" not in sent


def test_the_deny_list_holds_without_approvals_and_for_every_file_tool(
    provider: ProviderConfig, places: dict[str, Path]
) -> None:
    config = GatewayConfig(provider=provider, cwd=places["workspace"], approvals=False)
    gateway = Gateway(config)
    log = EventLog()
    gateway.subscribe(log)
    try:
        session = gateway.session_create()
        prompts = [
            call("list_dir", path="~/.ssh"),
            call("write_file", path="~/.ssh/authorized_keys", content="ssh-ed25519 AAAA"),
            call("read_file", path="~/.ssh/id_ed25519"),
        ]
        for prompt in prompts:
            log.complete(gateway.prompt_submit(session, prompt).turn_id)
    finally:
        assert gateway.shutdown(timeout_s=5).threads_left == []
    results = log.of_type(ToolComplete)
    assert [r.content.split(":")[0] for r in results] == [
        "list_dir refused",
        "write_file refused",
        "read_file refused",
    ]
    assert not (places["home"] / ".ssh" / "authorized_keys").exists()


def test_a_hard_link_in_the_workspace_to_a_denied_file_is_refused(
    provider: ProviderConfig, places: dict[str, Path]
) -> None:
    """A hard link is another name of the same file: no path says it is the key. The device
    and inode do, and the read is refused without asking (approvals off, as they may be)."""
    key = places["home"] / ".ssh" / "id_ed25519"
    (places["workspace"] / "notes-backup").hardlink_to(key)
    (places["workspace"] / "two-names.txt").write_text("an ordinary file\n")
    (places["workspace"] / "also-ordinary.txt").hardlink_to(places["workspace"] / "two-names.txt")
    config = GatewayConfig(provider=provider, cwd=places["workspace"], approvals=False)
    gateway = Gateway(config)
    log = EventLog()
    gateway.subscribe(log)
    try:
        session = gateway.session_create()
        for path in ("notes-backup", "also-ordinary.txt"):
            log.complete(gateway.prompt_submit(session, call("read_file", path=path)).turn_id)
    finally:
        assert gateway.shutdown(timeout_s=5).threads_left == []
    refused, ordinary = log.of_type(ToolComplete)
    assert refused.is_error and refused.content.startswith("read_file refused")
    assert "PRIVATE KEY" not in refused.content
    assert not ordinary.is_error and "an ordinary file" in ordinary.content
