"""The editing tools: ``edit_file`` (one exact replacement) and ``apply_patch`` (codex's format).

Both work their whole change out first (:meth:`EditFileTool.plan`, :meth:`ApplyPatchTool.plan`:
read every file, find every text), so a change that cannot be made is refused with a message
the model can act on before anything is asked or written: an ``old`` text that is absent or
found more than once (with the count), a hunk that does not fit, a file that is missing, binary
or too large. The tool batch plans before the approval (the person is asked with the diff the
call will make) and the call plans again when it runs (the file may have changed meanwhile).

Every file is written atomically (a temporary file beside it, ``fsync``, ``os.replace``), one
after the other; once a file's write started it runs to its end, and a stop that lands during a
patch is re-raised before the next file, so a stop or a crash leaves each file old or new,
never half, and a stopped patch writes nothing more.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.checkpoints.diff import shown_path
from agent.tools.base import ToolArgumentError, ToolContext, ToolResult
from agent.tools.changes import EditRefused, FileChange
from agent.tools.files import fsync_dir, os_error, write_bytes_atomic
from agent.tools.patch import (
    AddFile,
    DeleteFile,
    PatchError,
    apply_hunks,
    op_paths,
    parse_patch,
)
from agent.tools.process import run_to_completion
from agent.tools.workspace import resolve

MAX_EDIT_BYTES = 10_000_000
"""Largest file the editing tools change (a larger one is refused: rewrite it with the shell)."""


def replace_text(text: str, old: str, new: str, *, replace_all: bool, where: str) -> str:
    """``text`` with ``old`` replaced by ``new``.

    Args:
        text: the file's text.
        old: the exact text to find (white space included).
        new: what it becomes.
        replace_all: replace every occurrence (else ``old`` must occur once).
        where: the file, for messages.

    Raises:
        EditRefused: ``old`` is empty, equals ``new``, is absent, or occurs more than once
            without ``replace_all`` (the message gives the count).
    """
    if not old:
        raise EditRefused(
            f"edit_file refused: `old` is empty; to write {where} whole, use write_file"
        )
    if old == new:
        raise EditRefused("edit_file refused: `old` and `new` are the same; nothing would change")
    count = text.count(old)
    if count == 0:
        raise EditRefused(
            f"edit_file refused: `old` was not found in {where} (0 matches); read the file "
            "and copy the text exactly, white space and line breaks included"
        )
    if count > 1 and not replace_all:
        raise EditRefused(
            f"edit_file refused: `old` matches {count} places in {where}; include more of the "
            "surrounding lines so that it matches one, or set replace_all to change all of them"
        )
    return text.replace(old, new)


def read_text(path: Path, *, tool: str) -> tuple[bytes, str]:
    """A text file's bytes and text, for an edit.

    Raises:
        EditRefused: missing, not a regular file, too large, binary or not UTF-8.
    """
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            raise EditRefused(f"{tool} refused: {path} is not a regular file")
        if info.st_size > MAX_EDIT_BYTES:
            raise EditRefused(
                f"{tool} refused: {path} is too large to edit ({info.st_size:,} bytes; limit "
                f"{MAX_EDIT_BYTES:,})"
            )
        data = path.read_bytes()
    except FileNotFoundError:
        raise EditRefused(f"{tool} refused: {path} does not exist") from None
    except OSError as exc:
        raise EditRefused(os_error(exc, path, f"{tool} refused: cannot read").content) from None
    return data, _text_of(path, data, tool=tool)


def _text_of(path: Path, data: bytes, *, tool: str = "apply_patch") -> str:
    if b"\0" in data[:8192]:
        raise EditRefused(f"{tool} refused: {path} is a binary file, not text")
    if len(data) > MAX_EDIT_BYTES:
        raise EditRefused(f"{tool} refused: {path} is too large to edit ({len(data):,} bytes)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise EditRefused(f"{tool} refused: {path} is not UTF-8 text") from None


def encode(text: str, tool: str) -> bytes:
    """``text`` as UTF-8.

    Raises:
        EditRefused: it holds a lone surrogate (not valid text).
    """
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise EditRefused(f"{tool} refused: the new text is not valid ({exc.reason})") from None


def _current(path: Path) -> bytes | None:
    try:
        return path.read_bytes() if path.is_file() else None
    except OSError:
        return None


def write_change(change: FileChange) -> ToolResult:
    """Make one file's change on disk, atomically; blocking.

    Returns:
        a one-line result (``updated PATH``...) or an error result (the file unchanged).
    """
    if change.after is None:
        try:
            os.unlink(change.path)
        except FileNotFoundError:
            pass
        except OSError as exc:
            return os_error(exc, change.path, "cannot delete")
        fsync_dir(change.path.parent)
        return ToolResult(f"deleted {change.path}")
    result = write_bytes_atomic(change.path, change.after)
    if result.is_error:
        return result
    verb = "added" if change.before is None else "updated"
    return ToolResult(f"{verb} {change.path}")


async def write_changes(changes: list[FileChange], ctx: ToolContext) -> ToolResult:
    """Write ``changes`` in order, each to its end; a stop is re-raised between two files.

    Returns:
        one line per file written (``updated src/app.py``: relative to the cwd when inside
        it); an error result at the first file that fails (the files before it are written,
        the rest are not).
    """
    lines: list[str] = []
    for index, change in enumerate(changes):
        await asyncio.sleep(0)  # a stop that came during the last file ends the patch here
        result = await run_to_completion(
            asyncio.ensure_future(asyncio.to_thread(write_change, change))
        )
        if result.is_error:
            done = f" ({index} of {len(changes)} files were changed before)" if index else ""
            return ToolResult.error(result.content + done)
        verb = (
            "deleted" if change.after is None else "added" if change.before is None else "updated"
        )
        line = f"{verb} {shown_path(change.path, ctx.cwd)}"
        lines.append(line)
        ctx.on_output(line + "\n")
    return ToolResult("\n".join(lines))


@dataclass(frozen=True, slots=True)
class EditFileTool:
    """Replaces an exact text in a file (once, or everywhere with ``replace_all``)."""

    name: str = "edit_file"
    description: str = (
        "Replace the exact text `old` (white space included) in a file with `new`; `old` "
        "must occur once unless `replace_all`."
    )
    needs_approval: bool = True

    @property
    def parameters(self) -> dict[str, Any]:
        """JSON schema of the arguments."""
        return {
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "old": {"type": "string"},
                "new": {"type": "string"},
                "replace_all": {"type": "boolean"},
            },
            "required": ["path", "old", "new"],
            "additionalProperties": False,
        }

    def path_argument(self, args: dict[str, Any]) -> str:
        """The file a call edits (see :class:`agent.tools.workspace.TouchesPath`)."""
        return str(args["path"])

    def changed_paths(self, args: dict[str, Any], cwd: Path) -> list[Path]:
        """The one file a call edits (see :class:`agent.tools.changes.ChangesFiles`)."""
        return [resolve(str(args["path"]), cwd)]

    def plan(self, args: dict[str, Any], cwd: Path) -> list[FileChange]:
        """The edit as a change of one file; blocking.

        Raises:
            EditRefused: see :func:`replace_text` and :func:`read_text`.
        """
        path = resolve(str(args["path"]), cwd)
        data, text = read_text(path, tool=self.name)
        new = replace_text(
            text,
            str(args["old"]),
            str(args["new"]),
            replace_all=bool(args.get("replace_all", False)),
            where=str(path),
        )
        return [FileChange(path, data, encode(new, self.name))]

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Plan and write the edit; a refusal or a failure is an error result."""
        try:
            changes = await asyncio.to_thread(self.plan, args, ctx.cwd)
        except EditRefused as exc:
            return ToolResult.error(str(exc))
        result = await write_changes(changes, ctx)
        if result.is_error:
            return result
        count = text_count(args)
        return ToolResult(f"edited {shown_path(changes[0].path, ctx.cwd)}: replaced {count}")


def text_count(args: dict[str, Any]) -> str:
    """``1 occurrence`` or ``all occurrences``, for an edit's result."""
    return "all occurrences" if args.get("replace_all") else "1 occurrence"


def patch_paths(patch: str) -> list[str]:
    """Every path a patch names, as written, in order, without repeats.

    Raises:
        ToolArgumentError: the patch cannot be read (the message says where).
    """
    try:
        ops = parse_patch(patch)
    except PatchError as exc:
        raise ToolArgumentError(f"apply_patch: {exc}", "apply_patch") from None
    seen: dict[str, None] = {}
    for op in ops:
        for path in op_paths(op):
            seen.setdefault(path, None)
    return list(seen)


def plan_patch(patch: str, cwd: Path) -> list[FileChange]:
    """A patch's change, one entry per file in the order first touched; blocking.

    Raises:
        EditRefused: the patch cannot be read, a file to update or delete is missing, or a
            hunk does not fit its file (nothing is changed then).
    """
    try:
        ops = parse_patch(patch)
    except PatchError as exc:
        raise EditRefused(f"apply_patch refused: {exc}") from None
    before: dict[Path, bytes | None] = {}
    state: dict[Path, bytes | None] = {}

    def now(path: Path) -> bytes | None:
        if path not in state:
            before[path] = state[path] = _current(path)
        return state[path]

    for op in ops:
        path = resolve(op.path, cwd)
        if isinstance(op, AddFile):
            now(path)
            state[path] = encode(op.content, "apply_patch")
            continue
        if now(path) is None:
            verb = "delete" if isinstance(op, DeleteFile) else "update"
            raise EditRefused(f"apply_patch refused: cannot {verb} {op.path}: no such file")
        if isinstance(op, DeleteFile):
            state[path] = None
            continue
        text = _text_of(path, state[path] or b"")
        try:
            new = encode(apply_hunks(op.path, text, op.hunks), "apply_patch")
        except PatchError as exc:
            raise EditRefused(f"apply_patch refused: {exc}") from None
        if op.move_to is None:
            state[path] = new
        else:
            target = resolve(op.move_to, cwd)
            now(target)
            state[path] = None
            state[target] = new
    return [FileChange(p, before[p], state[p]) for p in before if before[p] != state[p]]


@dataclass(frozen=True, slots=True)
class ApplyPatchTool:
    """Applies a patch in codex's format (:mod:`agent.tools.patch`) to one or more files."""

    name: str = "apply_patch"
    description: str = (
        "Change files with a patch: '*** Begin Patch', then sections '*** Add File: P' "
        "(+lines), '*** Delete File: P', '*** Update File: P' (optionally '*** Move to: Q') "
        "with '@@' hunks of ' ' context, '-' and '+' lines (3 lines of context), then "
        "'*** End Patch'."
    )
    needs_approval: bool = True

    @property
    def parameters(self) -> dict[str, Any]:
        """JSON schema of the arguments."""
        return {
            "type": "object",
            "properties": {
                "patch": {"type": "string"},
            },
            "required": ["patch"],
            "additionalProperties": False,
        }

    def path_arguments(self, args: dict[str, Any]) -> list[str]:
        """The files a call touches (see :class:`agent.tools.workspace.TouchesPaths`).

        Raises:
            ToolArgumentError: the patch cannot be read.
        """
        return patch_paths(str(args["patch"]))

    def changed_paths(self, args: dict[str, Any], cwd: Path) -> list[Path]:
        """Every file a call may change (see :class:`agent.tools.changes.ChangesFiles`)."""
        with contextlib.suppress(ToolArgumentError):
            return [resolve(path, cwd) for path in patch_paths(str(args["patch"]))]
        return []

    def plan(self, args: dict[str, Any], cwd: Path) -> list[FileChange]:
        """The patch's change; blocking (see :func:`plan_patch`)."""
        return plan_patch(str(args["patch"]), cwd)

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Plan and write the patch, file by file; a refusal or a failure is an error result."""
        try:
            changes = await asyncio.to_thread(self.plan, args, ctx.cwd)
        except EditRefused as exc:
            return ToolResult.error(str(exc))
        if not changes:
            return ToolResult("the patch changes nothing: the files already hold it")
        return await write_changes(changes, ctx)


__all__ = [
    "MAX_EDIT_BYTES",
    "ApplyPatchTool",
    "EditFileTool",
    "patch_paths",
    "plan_patch",
    "read_text",
    "replace_text",
    "write_change",
    "write_changes",
]
