"""@file mentions: the file's text reaches the server with the prompt, cut with a note when too
big, refused in one line for a denied path; the completion list respects .gitignore."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest

from agent.context.mention_spelling import spelled
from agent.context.mentions import (
    MentionRefused,
    find_attachments,
    fuzzy_rank,
    mentionable,
    mentions_in,
    with_attachments,
    workspace_files,
)
from agent.provider.client import ProviderConfig
from agent.tools import ReadFileTool, ToolContext
from agent.tools.workspace import Workspace
from contract.errors import GatewayError
from contract.events import ToolComplete
from demo_model import DemoModelServer
from tests.support import EventLog
from tui_gateway.gateway import Gateway, GatewayConfig


def test_mentions_are_read_from_the_prompt() -> None:
    text = "see @README.md, and @src/app.py. mail me@example.com or @a\\ b.txt"
    # as typed: a sentence's punctuation after one is dropped when that names the file
    assert mentions_in(text) == ["README.md,", "src/app.py.", "a b.txt"]
    # a hand-typed @notes(1).txt named "notes", @owl_🦉.md "owl_": both left as typed
    bare = "read @notes(1).txt and @owl_🦉.md, (see @x.py)"
    assert mentions_in(bare) == ["notes(1).txt", "owl_🦉.md,", "x.py)"]
    quoted = 'read @"notes (1).txt", then @"a b/c[2].md" and @"unclosed'
    assert mentions_in(quoted) == ["notes (1).txt", "a b/c[2].md"]


def test_any_file_name_can_be_mentioned_bare_or_quoted(tmp_path: Path) -> None:
    (tmp_path / "notes (1).txt").write_text("the first note\n")
    (tmp_path / "owl_🦉.md").write_text("hoot\n")
    text = 'summarise @"notes (1).txt" and @owl_🦉.md.'
    found = find_attachments(text, Workspace(tmp_path), tmp_path)
    assert [(a.mention, a.text) for a in found] == [
        ("notes (1).txt", "the first note\n"),
        ("owl_🦉.md", "hoot\n"),
    ]
    assert spelled("notes (1).txt") == '"notes (1).txt"' and spelled("owl_🦉.md") == "owl_🦉.md"
    assert mentions_in("x @" + spelled("notes (1).txt")) == ["notes (1).txt"]


def test_a_mention_attaches_the_file_once_and_cuts_a_large_one(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("# Title\nhello\n")
    (tmp_path / "big.txt").write_text("x" * 50_000)
    space = Workspace(tmp_path, ())
    found = find_attachments("@README.md and @README.md, then @big.txt. @nobody", space, tmp_path)
    assert [a.mention for a in found] == ["README.md", "big.txt"]
    assert found[1].cut and "left out" in found[1].text and len(found[1].text) < 41_000
    sent = with_attachments("look", found)
    assert sent.startswith('look\n\n<file path="README.md">\n# Title\nhello\n</file>')
    assert '<file path="big.txt" (cut: its middle is left out)>' in sent


def test_a_denied_or_binary_file_refuses_the_prompt_in_one_line(tmp_path: Path) -> None:
    secret = tmp_path / "secrets" / "key"
    secret.parent.mkdir()
    secret.write_text("PRIVATE")
    (tmp_path / "blob.bin").write_bytes(b"\x00\x01\x02")
    space = Workspace(tmp_path, (secret.parent,))
    with pytest.raises(Exception, match=r"^@secrets/key is refused: .* deny list") as caught:
        find_attachments("read @secrets/key", space, tmp_path)
    assert "\n" not in str(caught.value)
    with pytest.raises(Exception, match="not a text file"):
        find_attachments("@blob.bin", space, tmp_path)


def test_a_file_that_is_not_utf8_is_refused_as_read_file_refuses_it(tmp_path: Path) -> None:
    (tmp_path / "latin1.txt").write_bytes("café au lait\n".encode("latin-1"))
    space = Workspace(tmp_path, ())
    refused = asyncio.run(ReadFileTool().run({"path": "latin1.txt"}, ToolContext(cwd=tmp_path)))
    assert refused.is_error and "not UTF-8 text" in refused.content
    with pytest.raises(MentionRefused, match=r"^@latin1.txt is not UTF-8 text .*nothing was sent$"):
        find_attachments("what is in @latin1.txt?", space, tmp_path)


def test_the_list_is_gits_when_a_repository_and_ranks_fuzzily(tmp_path: Path) -> None:
    for name in ("README.md", "src/app.py", "src/deep/readers.py", "build/out.js", ".hidden/x"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x\n")
    walked = workspace_files(tmp_path)
    assert "build/out.js" in walked and ".hidden/x" not in walked
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("build/\n")
    listed = workspace_files(tmp_path)
    assert "build/out.js" not in listed and "src/app.py" in listed and ".gitignore" in listed
    assert fuzzy_rank("read", listed)[:2] == ["README.md", "src/deep/readers.py"]
    assert fuzzy_rank("sap", listed)[0] == "src/app.py"  # the tightest match first
    assert fuzzy_rank("zzz", listed) == []


@pytest.mark.parametrize("git", [False, True])
def test_only_files_a_mention_can_name_are_offered(tmp_path: Path, git: bool) -> None:
    # A name that is not UTF-8 (as the file system gives it: a lone surrogate) or holds a
    # character a mention cannot spell was offered, put in the box by Tab, then reached the
    # prompt as something that named no file: the prompt went without it and without a word.
    # A name with brackets is quoted; one with a quote cannot be spelled.
    names = ["plain.txt", "with space.md", "we\udcffird.txt", "a(b).txt", 'say "hi".txt']
    names.append("owl_🦉.md")  # an emoji is no \\w: such a name was never offered
    for name in names:
        (tmp_path / name).write_bytes(b"x\n")
    if git:
        subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    assert workspace_files(tmp_path) == ["a(b).txt", "owl_🦉.md", "plain.txt", "with space.md"]
    assert mentionable("src/deep/readers.py") and not mentionable("we\udcffird.txt")


def test_a_mentioned_file_reaches_the_server_with_the_prompt(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    (tmp_path / "README.md").write_text("The answer is forty-two.\n")
    (tmp_path / "token.txt").write_text("SECRET")
    denied = (tmp_path / "token.txt",)  # as desk serve's token file is
    config = GatewayConfig(provider=provider, approvals=False, cwd=tmp_path, denied_paths=denied)
    gateway = Gateway(config)
    log = EventLog()
    gateway.subscribe(log)
    try:
        session = gateway.session_create()
        turn = gateway.prompt_submit(session, "what does @README.md say?").turn_id
        assert log.complete(turn, 60).status == "completed"
        (record,) = demo_server.records.list()
        sent = record.messages[-1]["content"]
        assert sent.startswith("what does @README.md say?")
        assert '<file path="README.md">\nThe answer is forty-two.\n</file>' in sent
        with pytest.raises(GatewayError, match="^@token.txt is refused: .*nothing was sent$"):
            gateway.prompt_submit(session, "what is in @token.txt?")
        assert len(demo_server.records.list()) == 1  # nothing more was sent
        assert gateway.workspace_files("rdm") == ["README.md"]
    finally:
        assert gateway.shutdown(timeout_s=10).threads_left == []


def test_a_tilde_of_no_user_is_a_name_not_a_crash(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    """``@~nosuchuser/notes.txt`` in a prompt, and the same path in a model's call: the
    prompt goes as typed and the call gets "not found"; desk died of both ("Could not
    determine home directory"), the turn booked as an internal error, its card left running."""
    config = GatewayConfig(provider=provider, approvals=False, cwd=tmp_path)
    gateway = Gateway(config)
    log = EventLog()
    gateway.subscribe(log)
    try:
        session = gateway.session_create()
        turn = gateway.prompt_submit(session, "please read @~nosuchuser/notes.txt").turn_id
        assert log.complete(turn, 60).status == "completed"
        assert demo_server.records.list()[-1].messages[-1]["content"] == (
            "please read @~nosuchuser/notes.txt"
        )
        call = 'call tool read_file with {"path": "~nosuchuser/x"}'
        turn = gateway.prompt_submit(session, call).turn_id
        done = log.complete(turn, 60)
        assert (done.status, done.error) == ("completed", None)
        (result,) = [t for t in log.of_type(ToolComplete) if t.turn_id == turn]
        assert result.is_error and "~nosuchuser/x" in result.content
        assert "home directory" not in result.content
    finally:
        assert gateway.shutdown(timeout_s=10).threads_left == []
