"""File tools: ``read_file``, ``write_file`` (atomic) and ``list_dir``.

Paths are resolved against ``ctx.cwd``; which paths a call may touch at all, and which ask the
person first, is the workspace boundary's business (:mod:`agent.tools.workspace`, applied by
the tool batch before a call runs). Every failure the model can cause or fix (a missing file,
a directory where a file was expected, no permission, a binary file, a file too large) is a
``ToolResult(is_error=True)`` with a one-line message naming the path, never an exception.

The file system calls are blocking; each call runs them in a worker thread
(``asyncio.to_thread``) so the turn's event loop stays free to notice a stop. A stop during a
``write_file`` leaves either the old file or the new one, never a mix: the content goes to a
temporary file in the same directory, is flushed and ``fsync``-ed, and is renamed over the target
(POSIX ``rename`` is atomic), then the directory is ``fsync``-ed.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.tools.base import ToolContext, ToolResult
from agent.tools.output import cut_marker
from agent.tools.process import run_to_completion
from agent.tools.workspace import resolve

_BINARY_SNIFF_BYTES = 8_192
_READ_CAP_BYTES = 1_000_000


def os_error(exc: OSError, path: Path, doing: str) -> ToolResult:
    """A clear one-line error for an ``OSError`` raised while ``doing`` something to ``path``."""
    reasons = {
        errno.ENOENT: "no such file or directory",
        errno.EACCES: "permission denied",
        errno.EPERM: "operation not permitted",
        errno.EISDIR: "is a directory",
        errno.ENOTDIR: "a parent of the path is not a directory",
        errno.EROFS: "read-only file system",
        errno.ENOSPC: "no space left on the device",
        errno.EDQUOT: "disk quota exceeded",
        errno.EFBIG: "file too large for the file system or the process's limit",
        errno.ENAMETOOLONG: "file name too long",
        errno.ELOOP: "too many levels of symbolic links",
    }
    reason = reasons.get(exc.errno or 0, exc.strerror or str(exc))
    return ToolResult.error(f"{doing} {path}: {reason}")


def _utf8_cut(data: bytes) -> int:
    """The length of the longest prefix of ``data`` that does not end inside a UTF-8 char."""
    end = len(data)
    back = 0
    while end - back > 0 and back < 3 and (data[end - back - 1] & 0xC0) == 0x80:
        back += 1
    lead_at = end - back - 1
    if lead_at >= 0 and data[lead_at] >= 0xC0:
        lead = data[lead_at]
        need = 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
        if back + 1 < need:
            return lead_at
    return end


@dataclass(frozen=True, slots=True)
class ReadFileTool:
    """Reads a UTF-8 text file, in windows of ``max_bytes`` bytes from ``offset``.

    Attributes:
        max_file_bytes: files larger than this are refused (read them with the shell).
    """

    max_file_bytes: int = 50_000_000
    name: str = "read_file"
    description: str = (
        "Read a UTF-8 text file. Returns at most `max_bytes` bytes starting at byte `offset`; "
        "when the file goes on, the text ends with the offset to continue from."
    )
    needs_approval: bool = False

    @property
    def parameters(self) -> dict[str, Any]:
        """JSON schema of the arguments."""
        return {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File path, relative to the cwd."},
                "offset": {"type": "integer", "minimum": 0, "description": "Start byte."},
                "max_bytes": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": _READ_CAP_BYTES,
                    "description": "Most bytes to return (default: the output budget).",
                },
            },
            "required": ["path"],
            "additionalProperties": False,
        }

    def path_argument(self, args: dict[str, Any]) -> str:
        """The file a call reads (see :class:`agent.tools.workspace.TouchesPath`)."""
        return str(args["path"])

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Read the file; errors are results (missing, directory, permission, binary, large)."""
        path = ctx.resolve(str(args["path"]))
        offset = int(args.get("offset", 0))
        max_bytes = int(args.get("max_bytes", ctx.max_output_bytes))
        return await asyncio.to_thread(self._read, path, offset, max_bytes)

    def _read(self, path: Path, offset: int, max_bytes: int) -> ToolResult:
        try:
            # stat before open: opening a FIFO or a device could block or have side effects.
            info = os.stat(path)
            if stat.S_ISDIR(info.st_mode):
                return ToolResult.error(f"cannot read {path}: is a directory (use list_dir)")
            if not stat.S_ISREG(info.st_mode):
                return ToolResult.error(f"cannot read {path}: not a regular file")
            size = info.st_size
            if size > self.max_file_bytes:
                return ToolResult.error(
                    f"cannot read {path}: file too large ({size:,} bytes; limit "
                    f"{self.max_file_bytes:,}); look into it with the shell (head, grep)"
                )
            with open(path, "rb") as handle:
                size = max(size, os.fstat(handle.fileno()).st_size)
                sniff = handle.read(_BINARY_SNIFF_BYTES)
                if b"\0" in sniff:
                    return ToolResult.error(
                        f"cannot read {path}: binary file ({size:,} bytes), not text"
                    )
                if offset > size:
                    return ToolResult.error(
                        f"cannot read {path}: offset {offset:,} is past the end ({size:,} bytes)"
                    )
                handle.seek(offset)
                data = handle.read(max_bytes)
        except IsADirectoryError:
            return ToolResult.error(f"cannot read {path}: is a directory (use list_dir)")
        except OSError as exc:
            return os_error(exc, path, "cannot read")
        end = offset + len(data)
        if end < size:
            data = data[: _utf8_cut(data)] or data
            end = offset + len(data)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return ToolResult.error(
                f"cannot read {path}: not UTF-8 text (binary or other encoding)"
            )
        if end < size:
            rest = size - end
            note = f"{cut_marker(rest)} the file goes on: read on with offset={end}"
            return ToolResult(content=f"{text}\n{note}", truncated=True)
        return ToolResult(content=text if text else f"({path} is empty)")


@dataclass(frozen=True, slots=True)
class WriteFileTool:
    """Writes a whole file atomically (temp file in the same directory, fsync, rename)."""

    name: str = "write_file"
    description: str = (
        "Create or replace a text file with `content` (UTF-8). Parent directories are created. "
        "The write is atomic: readers see the old file or the new one, never a mix."
    )
    needs_approval: bool = True

    @property
    def parameters(self) -> dict[str, Any]:
        """JSON schema of the arguments."""
        return {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File path, relative to the cwd."},
                "content": {"type": "string", "description": "The whole new content."},
            },
            "required": ["path", "content"],
            "additionalProperties": False,
        }

    def path_argument(self, args: dict[str, Any]) -> str:
        """The file a call writes (see :class:`agent.tools.workspace.TouchesPath`)."""
        return str(args["path"])

    def changed_paths(self, args: dict[str, Any], cwd: Path) -> list[Path]:
        """The one file a call writes (see :class:`agent.tools.changes.ChangesFiles`)."""
        return [resolve(str(args["path"]), cwd)]

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Write the file; errors are results (directory, permission, no space...)."""
        path = ctx.resolve(str(args["path"]))
        content = str(args["content"])
        # Once started, the write runs to its end (it is short and must never be half done,
        # nor outlive the call on a worker thread); a stop that lands meanwhile is re-raised
        # right after it.
        return await run_to_completion(
            asyncio.ensure_future(asyncio.to_thread(write_atomic, path, content))
        )


def write_atomic(path: Path, content: str) -> ToolResult:
    """Replace ``path`` with ``content`` atomically; blocking.

    Args:
        path: absolute target path; missing parent directories are created.
        content: the text, written as UTF-8 (lone surrogates are refused).

    Returns:
        ``wrote N bytes to PATH`` or an error result; on error the target is unchanged and the
        temporary file is removed.
    """
    try:
        data = content.encode("utf-8")
    except UnicodeEncodeError as exc:
        return ToolResult.error(f"cannot write {path}: content is not valid text ({exc.reason})")
    return write_bytes_atomic(path, data)


def write_bytes_atomic(path: Path, data: bytes) -> ToolResult:
    """Replace ``path`` with ``data`` atomically (see :func:`write_atomic`); blocking.

    Returns:
        ``wrote N bytes to PATH`` or an error result (the target is then unchanged).
    """
    if path.is_symlink():  # write through the link, do not replace it with a file
        path = Path(os.path.realpath(path))
    if path.is_dir():
        return ToolResult.error(f"cannot write {path}: is a directory")
    parent = path.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        return ToolResult.error(f"cannot write {path}: a parent of the path is not a directory")
    except OSError as exc:
        return os_error(exc, parent, "cannot create the directory")
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    except OSError as exc:
        return os_error(exc, path, "cannot write")
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=parent)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
        tmp = None
        fsync_dir(parent)
    except OSError as exc:
        return os_error(exc, path, "cannot write")
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    return ToolResult(content=f"wrote {len(data):,} bytes to {path}")


def fsync_dir(directory: Path) -> None:
    """Make a rename in ``directory`` durable (best effort where directories cannot be opened)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


@dataclass(frozen=True, slots=True)
class ListDirTool:
    """Lists a directory: one entry a line, directories with ``/``, files with their size.

    Attributes:
        max_entries: entries listed at most; the rest are counted.
    """

    max_entries: int = 1_000
    name: str = "list_dir"
    description: str = (
        "List a directory (default: the cwd): one entry per line, sorted; directories end "
        "with '/', symlinks show their target, files show their size in bytes."
    )
    needs_approval: bool = False

    @property
    def parameters(self) -> dict[str, Any]:
        """JSON schema of the arguments."""
        return {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Directory path (default '.')."},
            },
            "additionalProperties": False,
        }

    def path_argument(self, args: dict[str, Any]) -> str:
        """The directory a call lists (see :class:`agent.tools.workspace.TouchesPath`)."""
        return str(args.get("path", "."))

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """List the directory; errors are results (missing, not a directory, permission)."""
        path = ctx.resolve(str(args.get("path", ".")))
        return await asyncio.to_thread(self._list, path)

    def _list(self, path: Path) -> ToolResult:
        try:
            with os.scandir(path) as it:
                entries = sorted(it, key=lambda entry: entry.name)
            lines = [_describe_entry(entry) for entry in entries[: self.max_entries]]
        except NotADirectoryError:
            return ToolResult.error(f"cannot list {path}: not a directory (use read_file)")
        except OSError as exc:
            return os_error(exc, path, "cannot list")
        if not entries:
            return ToolResult(content=f"({path} is empty)")
        more = len(entries) - self.max_entries
        if more > 0:
            lines.append(f"[... {more:,} more entries ...]")
        return ToolResult(content="\n".join(lines), truncated=more > 0)


def _describe_entry(entry: os.DirEntry[str]) -> str:
    try:
        if entry.is_symlink():
            return f"{entry.name} -> {os.readlink(entry.path)}"
        if entry.is_dir():
            return f"{entry.name}/"
        return f"{entry.name}  ({entry.stat().st_size:,} bytes)"
    except OSError:
        return f"{entry.name}  (unreadable)"


__all__ = [
    "ListDirTool",
    "ReadFileTool",
    "WriteFileTool",
    "fsync_dir",
    "os_error",
    "write_atomic",
    "write_bytes_atomic",
]
