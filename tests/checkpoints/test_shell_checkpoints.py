"""A shell command's changes are recorded from a snapshot of the workspace: in a git repository
its tracked and unignored files (the index and the branches untouched), elsewhere its files
minus what .gitignore ignores; a file too large to keep is named as not restorable."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from agent.checkpoints.diff import read_current, sha_of
from agent.checkpoints.recorder import UNRECORDED_SHA, TurnRecorder
from agent.checkpoints.undo import undo_files
from agent.store import SqliteStore
from agent.store.rows import CheckpointRow


class ListSink:
    """Records kept in memory, as rows of one step."""

    def __init__(self) -> None:
        self.before: dict[str, bytes | None] = {}
        self.after: dict[str, str] = {}

    def record_before(self, path: str, before_data: bytes | None) -> None:
        self.before.setdefault(path, before_data)

    def record_after(self, path: str, after_sha: str) -> None:
        self.after[path] = after_sha

    def rows(self) -> list[CheckpointRow]:
        return [
            CheckpointRow("s", "t", 1, path, data, self.after.get(path), False, 0.0)
            for path, data in self.before.items()
        ]


def git(root: Path, *args: str) -> str:
    out = subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, check=True
    )
    return out.stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    git(root, "config", "user.email", "t@example.com")
    git(root, "config", "user.name", "t")
    (root / ".gitignore").write_text("build/\n")
    (root / "a.txt").write_text("tracked\n")
    git(root, "add", ".gitignore", "a.txt")
    git(root, "commit", "-qm", "first")
    (root / "notes.txt").write_text("untracked, not ignored\n")
    (root / "build").mkdir()
    (root / "build" / "out.txt").write_text("ignored\n")
    return root


def command(root: Path) -> None:
    """What a shell command might do."""
    (root / "a.txt").write_text("changed\n")
    (root / "notes.txt").unlink()
    (root / "new.txt").write_text("created\n")
    (root / "build" / "out.txt").write_text("rebuilt\n")


def test_a_command_in_a_git_repository_is_recorded_without_touching_the_index(
    repo: Path,
) -> None:
    index = (repo / ".git" / "index").read_bytes()
    head = git(repo, "rev-parse", "HEAD")
    status = git(repo, "status", "--porcelain")
    sink = ListSink()
    finish = TurnRecorder(repo, sink).before(None)
    command(repo)
    finish()
    assert sink.before == {
        str(repo / "a.txt"): b"tracked\n",
        str(repo / "notes.txt"): b"untracked, not ignored\n",
        str(repo / "new.txt"): None,
    }
    assert sink.after[str(repo / "notes.txt")] == ""
    assert (repo / ".git" / "index").read_bytes() == index
    assert git(repo, "rev-parse", "HEAD") == head
    assert git(repo, "stash", "list") == ""
    outcome = undo_files(sink.rows(), repo)
    assert sorted(outcome.restored) == ["a.txt", "notes.txt"]
    assert outcome.removed == ["new.txt"]  # the command created it: removed, not restored
    assert git(repo, "status", "--porcelain") == status
    assert (repo / "build" / "out.txt").read_text() == "rebuilt\n"  # ignored: not desk's


def test_outside_git_the_gitignore_is_honoured_and_a_large_file_is_named(
    tmp_path: Path,
) -> None:
    root = tmp_path / "plain"
    root.mkdir()
    (root / ".gitignore").write_text("*.log\n")
    (root / "app.log").write_text("log\n")
    (root / "a.txt").write_text("a\n")
    (root / "big.bin").write_bytes(b"\0" * 100)
    sink = ListSink()
    finish = TurnRecorder(root, sink).before(None)
    (root / "app.log").write_text("more log\n")
    (root / "a.txt").write_text("b\n")
    (root / "big.bin").write_bytes(b"\0" * 200)
    finish()
    assert sink.before == {str(root / "a.txt"): b"a\n", str(root / "big.bin"): None}
    assert sink.after[str(root / "big.bin")] == UNRECORDED_SHA
    outcome = undo_files(sink.rows(), root)
    assert outcome.restored == ["a.txt"]
    assert outcome.not_restored == ["big.bin: too large or binary to record before the change"]
    assert (root / "big.bin").read_bytes() == b"\0" * 200  # left alone, never deleted


def test_the_first_record_of_a_turn_wins_and_after_is_what_the_call_left(
    tmp_path: Path,
) -> None:
    path = tmp_path / "f.txt"
    path.write_bytes(b"one\n")
    sink = ListSink()
    recorder = TurnRecorder(tmp_path, sink)
    finish = recorder.before([path])
    path.write_bytes(b"two\n")
    finish()
    finish = recorder.before([path])
    path.write_bytes(b"three\n")
    finish()
    assert sink.before == {str(path): b"one\n"}
    assert sink.after == {str(path): sha_of(b"three\n")}
    outcome = undo_files(sink.rows(), tmp_path)
    assert read_current(path) == b"one\n" and outcome.restored == ["f.txt"]
    assert outcome.diff.splitlines()[-2:] == ["-three", "+one"]


class StoreSink:
    """Records written to a real session store, as the gateway writes them."""

    def __init__(self, store: SqliteStore, session: str) -> None:
        self.store = store
        self.session = session

    def record_before(self, path: str, before_data: bytes | None) -> None:
        self.store.checkpoints.record_before(self.session, "t1", path, before_data)

    def record_after(self, path: str, after_sha: str) -> None:
        self.store.checkpoints.record_after("t1", path, after_sha)


@pytest.mark.parametrize("in_git", [False, True])
def test_a_file_whose_name_is_not_utf8_is_saved_and_undone(tmp_path: Path, in_git: bool) -> None:
    # touch "$(printf 'x\376')" in a shell call: the name reached the store with a lone
    # surrogate, the write raised UnicodeEncodeError and the session's saving was given up
    root = tmp_path / "work"
    root.mkdir()
    if in_git:
        git(root, "init", "-q")
    odd = os.fsdecode(b"x\xfe.txt")
    (root / os.fsdecode(b"old\xff.txt")).write_bytes(b"before\n")
    with SqliteStore(tmp_path / "desk.db") as store:
        session = store.sessions.create_session("s").id
        finish = TurnRecorder(root, StoreSink(store, session)).before(None)
        (root / odd).write_bytes(b"made\n")
        (root / os.fsdecode(b"old\xff.txt")).write_bytes(b"after\n")
        finish()
        rows = store.checkpoints.checkpoint_files(session)
        assert len(rows) == 2 and all(r.path.isprintable() for r in rows)
        outcome = undo_files(rows, root)
    assert outcome.removed == ["x\ufffd.txt"]  # shown as valid text
    assert outcome.restored == ["old\ufffd.txt"]
    assert sorted(os.listdir(os.fsencode(root))) == ([b".git"] if in_git else []) + [b"old\xff.txt"]
    assert (root / os.fsdecode(b"old\xff.txt")).read_bytes() == b"before\n"
