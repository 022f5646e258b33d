"""edit_file and apply_patch: the change as asked, every refusal before anything is asked or
written (with the match count), the workspace boundary on every path, and a stop between two
files of a patch that writes nothing more."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.provider.types import ToolCall
from agent.tools import ToolBatch, ToolContext, ToolRegistry, ToolResult, default_tools
from agent.tools.edits import ApplyPatchTool, EditFileTool
from agent.tools.workspace import Workspace
from tests.tools.shellkit import run


def call(tool: Any, cwd: Path, **args: Any) -> ToolResult:
    result: ToolResult = run(tool.run(args, ToolContext(cwd=cwd)))
    return result


def batch_call(
    tmp_path: Path, name: str, args: dict[str, Any], asked: list[str], *, denied: Path | None = None
) -> ToolResult:
    async def approve(call: ToolCall, a: dict[str, Any], reason: str) -> bool:
        asked.append(reason or call.name)
        return True

    workspace = Workspace(tmp_path, (denied,) if denied is not None else ())
    batch = ToolBatch(
        ToolRegistry(default_tools()),
        [ToolCall(id="c1", name=name, arguments=json.dumps(args))],
        cwd=tmp_path,
        approve=approve,
        workspace=workspace,
    )
    (outcome,) = run(batch.run())
    return outcome.result


# -- edit_file ---------------------------------------------------------------------------------


def test_edit_file_replaces_the_one_match_and_keeps_the_rest_byte_for_byte(tmp_path: Path) -> None:
    target = tmp_path / "a.py"
    target.write_bytes(b"x = 1\r\ny = 2\n\xc3\xa9\n")
    os.chmod(target, 0o640)
    result = call(EditFileTool(), tmp_path, path="a.py", old="y = 2", new="y = 3")
    assert not result.is_error, result.content
    assert target.read_bytes() == b"x = 1\r\ny = 3\n\xc3\xa9\n"
    assert oct(target.stat().st_mode & 0o777) == oct(0o640)
    assert [p.name for p in tmp_path.iterdir()] == ["a.py"]  # no temporary file left


@pytest.mark.parametrize(
    ("old", "new", "replace_all", "message"),
    [
        ("zzz", "q", False, "`old` was not found in {p} (0 matches)"),
        ("a", "b", False, "`old` matches 3 places in {p}; include more of the surrounding"),
        ("", "b", False, "`old` is empty"),
        ("a", "a", False, "`old` and `new` are the same"),
    ],
)
def test_edit_file_refuses_saying_why_and_changes_nothing(
    tmp_path: Path, old: str, new: str, replace_all: bool, message: str
) -> None:
    target = tmp_path / "f.txt"
    target.write_text("a\na\na\n")
    args = {"path": "f.txt", "old": old, "new": new, "replace_all": replace_all}
    asked: list[str] = []
    result = batch_call(tmp_path, "edit_file", args, asked)
    assert result.is_error
    assert result.content == f"edit_file refused: {message.format(p=target)}" or (
        result.content.startswith(f"edit_file refused: {message.format(p=target)}")
    )
    assert asked == []  # refused before the person was asked
    assert target.read_text() == "a\na\na\n"


def test_edit_file_replace_all_changes_every_match(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("a\na\nb\n")
    result = call(EditFileTool(), tmp_path, path="f.txt", old="a", new="c", replace_all=True)
    assert result.content == "edited f.txt: replaced all occurrences"
    assert (tmp_path / "f.txt").read_text() == "c\nc\nb\n"


def test_edit_file_refuses_missing_and_binary_files(tmp_path: Path) -> None:
    (tmp_path / "bin").write_bytes(b"a\0b")
    missing = call(EditFileTool(), tmp_path, path="nope", old="a", new="b")
    binary = call(EditFileTool(), tmp_path, path="bin", old="a", new="b")
    assert missing.content == f"edit_file refused: {tmp_path / 'nope'} does not exist"
    assert binary.content == f"edit_file refused: {tmp_path / 'bin'} is a binary file, not text"


def test_edit_file_is_refused_on_the_deny_list_even_when_allowed(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "key").write_text("k")
    asked: list[str] = []
    args = {"path": "secret/key", "old": "k", "new": "x"}
    result = batch_call(tmp_path, "edit_file", args, asked, denied=secret)
    assert result.is_error and "deny list" in result.content and asked == []
    assert (secret / "key").read_text() == "k"


# -- apply_patch -------------------------------------------------------------------------------

PATCH = """*** Begin Patch
*** Add File: docs/new.md
+# New
*** Update File: src/app.py
*** Move to: src/main.py
@@ def greet():
-    print("Hi")
+    print("Hello")
*** Delete File: old.txt
*** End Patch
"""


def test_apply_patch_adds_updates_moves_and_deletes(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text('def greet():\n    print("Hi")\n')
    (tmp_path / "old.txt").write_text("bye\n")
    asked: list[str] = []
    result = batch_call(tmp_path, "apply_patch", {"patch": PATCH}, asked)
    assert not result.is_error, result.content
    assert asked == ["apply_patch"]
    assert (tmp_path / "docs" / "new.md").read_text() == "# New\n"
    assert (tmp_path / "src" / "main.py").read_text() == 'def greet():\n    print("Hello")\n'
    assert not (tmp_path / "src" / "app.py").exists() and not (tmp_path / "old.txt").exists()
    assert result.content.splitlines() == [
        "added docs/new.md",
        "deleted src/app.py",
        "added src/main.py",
        "deleted old.txt",
    ]


def test_a_patch_whose_second_file_does_not_fit_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\n")
    (tmp_path / "b.txt").write_text("two\n")
    patch = (
        "*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+ONE\n"
        "*** Update File: b.txt\n@@\n-three\n+THREE\n*** End Patch"
    )
    asked: list[str] = []
    result = batch_call(tmp_path, "apply_patch", {"patch": patch}, asked)
    assert result.is_error and asked == []
    assert (
        result.content
        == "apply_patch refused: cannot apply the patch to b.txt: these lines are not in it:\nthree"
    )
    assert (tmp_path / "a.txt").read_text() == "one\n"


def test_apply_patch_refusals_name_the_problem(tmp_path: Path) -> None:
    asked: list[str] = []
    unreadable = batch_call(tmp_path, "apply_patch", {"patch": "*** Begin Patch\nhi"}, asked)
    assert unreadable.content == (
        "apply_patch: invalid patch: the last line must be '*** End Patch'; the call was not "
        "run, fix it and call again"
    )
    missing = batch_call(
        tmp_path,
        "apply_patch",
        {"patch": "*** Begin Patch\n*** Delete File: gone\n*** End Patch"},
        asked,
    )
    assert missing.content == "apply_patch refused: cannot delete gone: no such file"
    assert asked == []


def test_every_path_of_a_patch_goes_through_the_boundary(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.mkdir()
    asked: list[str] = []
    patch = "*** Begin Patch\n*** Add File: ok.txt\n+x\n*** Add File: secret/k\n+y\n*** End Patch"
    denied = batch_call(tmp_path, "apply_patch", {"patch": patch}, asked, denied=secret)
    assert denied.is_error and "deny list" in denied.content and asked == []
    assert not (tmp_path / "ok.txt").exists()
    outside = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    patch = f"*** Begin Patch\n*** Add File: {outside}\n+z\n*** End Patch"
    try:
        result = batch_call(tmp_path / "secret", "apply_patch", {"patch": patch}, asked)
        assert not result.is_error
        assert asked == [f"apply_patch on {outside}, outside the workspace {tmp_path / 'secret'}"]
    finally:
        outside.unlink(missing_ok=True)


def test_a_stop_between_two_files_of_a_patch_writes_nothing_more(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a\n")
    (tmp_path / "b.txt").write_text("b\n")
    patch = (
        "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+A\n"
        "*** Update File: b.txt\n@@\n-b\n+B\n*** End Patch"
    )

    async def main() -> list[str]:
        written: list[str] = []
        task: asyncio.Task[ToolResult] | None = None

        def on_output(text: str) -> None:  # after the first file: the stop lands
            written.append(text)
            assert task is not None
            task.cancel()

        ctx = ToolContext(cwd=tmp_path, on_output=on_output)
        task = asyncio.ensure_future(ApplyPatchTool().run({"patch": patch}, ctx))
        with pytest.raises(asyncio.CancelledError):
            await task
        return written

    written = asyncio.run(main())
    assert written == ["updated a.txt\n"]
    assert (tmp_path / "a.txt").read_text() == "A\n"
    assert (tmp_path / "b.txt").read_text() == "b\n"  # never started
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "b.txt"]


@settings(deadline=None, max_examples=40)
@given(yields=st.integers(0, 60), files=st.integers(2, 6))
def test_a_stop_at_any_moment_of_a_patch_leaves_each_file_old_or_new_in_order(
    yields: int, files: int
) -> None:
    root = Path(tempfile.mkdtemp(prefix="desk-patch-"))
    try:
        names = [f"f{i}.txt" for i in range(files)]
        for name in names:
            (root / name).write_text(f"old {name}\n" * 50)
        sections = "".join(
            f"*** Update File: {name}\n@@\n-old {name}\n+new {name}\n" for name in names
        )
        patch = f"*** Begin Patch\n{sections}*** End Patch"

        async def main() -> None:
            task = asyncio.ensure_future(ApplyPatchTool().run({"patch": patch}, ToolContext(root)))
            for _ in range(yields):
                await asyncio.sleep(0)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

        asyncio.run(main())
        new = [(root / n).read_text().startswith("new") for n in names]
        for name in names:  # whole: the old text or the patched one, never a mix
            assert (root / name).read_text() in (
                f"old {name}\n" * 50,
                f"new {name}\n" + f"old {name}\n" * 49,
            )
        assert new == sorted(new, reverse=True)  # the files written are the first ones
        assert sorted(p.name for p in root.iterdir()) == sorted(names)  # no temporary file
    finally:
        shutil.rmtree(root, ignore_errors=True)
