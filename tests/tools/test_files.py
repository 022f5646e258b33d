"""read_file, write_file and list_dir: happy paths, every error as a result, atomic writes."""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.tools import ListDirTool, ReadFileTool, ToolContext, ToolResult, WriteFileTool
from agent.tools.files import write_atomic
from tests.tools.forkkit import in_child
from tests.tools.shellkit import run


def call(tool: Any, cwd: Path, **args: Any) -> ToolResult:
    result: ToolResult = run(tool.run(args, ToolContext(cwd=cwd)))
    return result


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory ``nobody`` can reach (pytest's tmp_path is private to root)."""
    path = Path(tempfile.mkdtemp(prefix="desk-tools-"))
    path.chmod(0o777)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def leftovers(directory: Path) -> list[str]:
    """Temporary files a write left behind."""
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


# -- read_file ---------------------------------------------------------------------------------


def test_read_file_returns_the_text_resolved_against_the_cwd(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.txt").write_text("hello\nwörld\n")
    assert call(ReadFileTool(), tmp_path, path="sub/a.txt") == ToolResult("hello\nwörld\n")
    absolute = call(ReadFileTool(), Path("/"), path=str(tmp_path / "sub" / "a.txt"))
    assert absolute.content == "hello\nwörld\n"


def test_read_file_of_an_empty_file_says_so(tmp_path: Path) -> None:
    (tmp_path / "empty").write_text("")
    result = call(ReadFileTool(), tmp_path, path="empty")
    assert not result.is_error and "is empty" in result.content


def test_read_file_reads_in_windows_without_splitting_characters(tmp_path: Path) -> None:
    text = "é" * 10 + "end"  # 23 bytes
    (tmp_path / "u.txt").write_text(text)
    first = call(ReadFileTool(), tmp_path, path="u.txt", max_bytes=5)
    assert first.truncated and not first.is_error
    assert first.content.startswith("éé\n")  # 4 bytes: the 5th would split an "é"
    assert first.content.endswith("read on with offset=4")
    pieces, offset = [], 0
    while True:
        result = call(ReadFileTool(), tmp_path, path="u.txt", offset=offset, max_bytes=5)
        if not result.truncated:
            pieces.append(result.content)
            break
        body, note = result.content.rsplit("\n", 1)
        pieces.append(body)
        offset = int(note.rsplit("=", 1)[1])
    assert "".join(pieces) == text


def test_read_file_uses_the_output_budget_by_default(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("x" * 100)
    result = run(
        ReadFileTool().run({"path": "big.txt"}, ToolContext(tmp_path, max_output_bytes=60))
    )
    assert result.truncated
    assert (
        result.content
        == "x" * 60 + "\n[... 40 bytes cut ...] the file goes on: read on with offset=60"
    )


@pytest.mark.parametrize(
    ("name", "make", "message"),
    [
        ("missing.txt", None, "no such file or directory"),
        ("adir", "dir", "is a directory (use list_dir)"),
        ("bin.dat", b"\x7fELF\x00\x01\x02", "binary file (7 bytes)"),
        ("latin1.txt", "café".encode("latin-1"), "not UTF-8 text"),
        ("fifo", "fifo", "not a regular file"),
    ],
)
def test_read_file_errors_are_results(
    tmp_path: Path, name: str, make: str | bytes | None, message: str
) -> None:
    target = tmp_path / name
    if make == "dir":
        target.mkdir()
    elif make == "fifo":
        os.mkfifo(target)  # opening it would block: the tool must not
    elif isinstance(make, bytes):
        target.write_bytes(make)
    result = call(ReadFileTool(), tmp_path, path=name)
    assert result.is_error
    assert message in result.content
    assert str(target) in result.content


def test_read_file_refuses_a_file_larger_than_its_limit(tmp_path: Path) -> None:
    (tmp_path / "big.log").write_text("y" * 101)
    result = call(ReadFileTool(max_file_bytes=100), tmp_path, path="big.log")
    assert result.is_error
    assert "file too large (101 bytes; limit 100)" in result.content


def test_read_file_offset_past_the_end_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "a").write_text("abc")
    result = call(ReadFileTool(), tmp_path, path="a", offset=10)
    assert result.is_error and "past the end (3 bytes)" in result.content


def test_read_file_without_permission_is_an_error(shared_dir: Path) -> None:
    secret = shared_dir / "secret.txt"
    secret.write_text("s3cret")
    secret.chmod(0o600)
    result = in_child(
        lambda: call(ReadFileTool(), shared_dir, path="secret.txt").content, drop_root=True
    )
    assert result == f"cannot read {secret}: permission denied"


# -- write_file --------------------------------------------------------------------------------


def test_write_file_creates_parents_and_writes_exactly(tmp_path: Path) -> None:
    result = call(WriteFileTool(), tmp_path, path="a/b/c.txt", content="héllo\n")
    assert result == ToolResult(f"wrote 7 bytes to {tmp_path / 'a/b/c.txt'}")
    assert (tmp_path / "a/b/c.txt").read_bytes() == "héllo\n".encode()
    assert leftovers(tmp_path / "a/b") == []


def test_write_file_replaces_a_file_and_keeps_its_mode(tmp_path: Path) -> None:
    target = tmp_path / "run.sh"
    target.write_text("old")
    target.chmod(0o751)
    call(WriteFileTool(), tmp_path, path="run.sh", content="new")
    assert target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o751


def test_write_file_new_files_get_the_umask_mode(tmp_path: Path) -> None:
    call(WriteFileTool(), tmp_path, path="n.txt", content="x")
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE((tmp_path / "n.txt").stat().st_mode) == 0o666 & ~umask


def test_write_file_writes_through_a_symlink(tmp_path: Path) -> None:
    (tmp_path / "real.txt").write_text("old")
    (tmp_path / "link.txt").symlink_to("real.txt")
    call(WriteFileTool(), tmp_path, path="link.txt", content="new")
    assert (tmp_path / "link.txt").is_symlink()
    assert (tmp_path / "real.txt").read_text() == "new"


def test_write_file_onto_a_directory_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    result = call(WriteFileTool(), tmp_path, path="d", content="x")
    assert result.is_error and "is a directory" in result.content


def test_write_file_below_a_file_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    result = call(WriteFileTool(), tmp_path, path="f/g.txt", content="x")
    assert result.is_error and "not a directory" in result.content


def test_write_file_without_permission_is_an_error_and_leaves_nothing(shared_dir: Path) -> None:
    locked = shared_dir / "locked"
    locked.mkdir()
    locked.chmod(0o755)  # owned by the test user; nobody may not create files in it
    (locked / "keep.txt").write_text("original")
    result = in_child(
        lambda: call(WriteFileTool(), locked, path="keep.txt", content="changed").content,
        drop_root=True,
    )
    assert result == f"cannot write {locked / 'keep.txt'}: permission denied"
    assert (locked / "keep.txt").read_text() == "original"
    assert leftovers(locked) == []


def test_write_file_failing_half_way_leaves_the_old_file_and_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "data.txt"
    target.write_text("old content")
    # The kernel accepts 4 KiB and then refuses with EFBIG: a real half-done write.
    result = in_child(lambda: write_atomic(target, "z" * 100_000).content, max_file_bytes=4_096)
    assert result.startswith(f"cannot write {target}: file too large")
    assert target.read_text() == "old content"
    assert leftovers(tmp_path) == []


def test_readers_never_see_a_partial_file(tmp_path: Path) -> None:
    target = tmp_path / "swap.txt"
    versions = ["a" * 2_000_000, "b" * 2_000_000]
    target.write_text(versions[0])
    writing_done = threading.Event()
    seen: set[str] = set()
    reads = 0

    def reader() -> None:
        nonlocal reads
        while not writing_done.is_set() or reads == 0:
            text = target.read_text()
            reads += 1
            seen.add("ok" if text in versions else f"partial:{len(text)}")

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for i in range(6):
            assert not write_atomic(target, versions[(i + 1) % 2]).is_error
    finally:
        writing_done.set()
        thread.join(10)
    assert not thread.is_alive()
    assert seen == {"ok"}, seen
    assert reads > 0


def test_a_stop_during_a_write_leaves_a_whole_file(tmp_path: Path) -> None:
    target = tmp_path / "w.txt"
    target.write_text("old")
    new = "n" * 5_000_000

    async def scenario() -> None:
        task = asyncio.create_task(
            WriteFileTool().run({"path": "w.txt", "content": new}, ToolContext(tmp_path))
        )
        await asyncio.sleep(0)  # one loop turn: the write is under way in its thread
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(scenario())
    assert target.read_text() == new  # the started write finished before the stop came out
    assert leftovers(tmp_path) == []


# -- list_dir ----------------------------------------------------------------------------------


def test_list_dir_lists_sorted_entries_with_kinds_and_sizes(tmp_path: Path) -> None:
    (tmp_path / "b.txt").write_text("12345")
    (tmp_path / "a_dir").mkdir()
    (tmp_path / "c").symlink_to("b.txt")
    result = call(ListDirTool(), tmp_path)
    assert result == ToolResult("a_dir/\nb.txt  (5 bytes)\nc -> b.txt")
    assert call(ListDirTool(), tmp_path.parent, path=tmp_path.name) == result


def test_list_dir_of_an_empty_directory_says_so(tmp_path: Path) -> None:
    result = call(ListDirTool(), tmp_path)
    assert not result.is_error and "is empty" in result.content


def test_list_dir_caps_the_number_of_entries(tmp_path: Path) -> None:
    for i in range(5):
        (tmp_path / f"f{i}").write_text("")
    result = call(ListDirTool(max_entries=3), tmp_path)
    assert result.truncated
    assert result.content.splitlines()[-1] == "[... 2 more entries ...]"


def test_list_dir_errors_are_results(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    missing = call(ListDirTool(), tmp_path, path="nope")
    assert missing.is_error and "no such file or directory" in missing.content
    not_dir = call(ListDirTool(), tmp_path, path="file")
    assert not_dir.is_error and "not a directory (use read_file)" in not_dir.content


def test_list_dir_without_permission_is_an_error(shared_dir: Path) -> None:
    private = shared_dir / "private"
    private.mkdir()
    private.chmod(0o700)
    result = in_child(lambda: call(ListDirTool(), private).content, drop_root=True)
    assert result == f"cannot list {private}: permission denied"
