"""A snapshot of a workspace's files, taken before a shell command, to tell what it changed.

Which files: in a git repository, the files git lists as tracked or untracked-but-not-ignored
(``git ls-files --cached --others --exclude-standard``: it reads the index and never writes
it, nor any branch); elsewhere, the workspace's files found by walking it, leaving out what
its ``.gitignore`` ignores (read with ``pathspec``) and the folders no one edits by hand
(``.git``, ``node_modules``, virtual environments, caches). A file larger than
``max_file_bytes``, a binary file (a NUL byte in its first 8 KB), and every file past
``max_total_bytes`` of content or ``max_files`` files is only noted by its size and time: if
the command changes it, it cannot be put back, and ``/undo`` says so.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from agent.checkpoints.diff import read_current

SKIPPED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        ".venv",
        "venv",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
    }
)
"""Folders a walk of a workspace that is not a git repository leaves out."""


@dataclass(slots=True)
class Snapshot:
    """The files of a workspace at one moment.

    Attributes:
        root: the workspace.
        data: the content of every file kept, by absolute path.
        noted: ``(size, mtime_ns)`` of every file listed but not kept (large, binary, past a
            cap).
        stamps: ``(size, mtime_ns)`` of every file kept: one whose stamp is the same after the
            command is not read again.
    """

    root: Path
    data: dict[Path, bytes] = field(default_factory=dict)
    noted: dict[Path, tuple[int, int]] = field(default_factory=dict)
    stamps: dict[Path, tuple[int, int]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Changed:
    """What a command changed, compared with a snapshot.

    Attributes:
        files: ``(path, before)`` of every kept file that changed, appeared (``before`` None)
            or disappeared.
        unrecorded: the files that changed but were only noted (they cannot be put back).
    """

    files: list[tuple[Path, bytes | None]]
    unrecorded: list[Path]


def _git_files(root: Path) -> list[Path] | None:
    """The files git lists in ``root`` (None when it is not in a git work tree)."""
    try:
        out = subprocess.run(
            [
                "git",
                "-C",
                str(root),
                "ls-files",
                "-z",
                "--cached",
                "--others",
                "--exclude-standard",
            ],
            capture_output=True,
            timeout=30,
            check=False,
            env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"},
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    names = out.stdout.decode("utf-8", "surrogateescape").split("\0")
    return [root / name for name in names if name]


def _walk(root: Path) -> Iterator[Path]:
    import pathspec  # here, not at load: desk's first frame does not wait for it

    ignore = None
    try:
        with open(root / ".gitignore", encoding="utf-8", errors="replace") as handle:
            ignore = pathspec.GitIgnoreSpec.from_lines(handle)
    except OSError:
        pass
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
        here = Path(folder)
        for name in sorted(files):
            path = here / name
            if ignore is not None and ignore.match_file(str(path.relative_to(root))):
                continue
            yield path


def list_files(root: Path) -> list[Path]:
    """The files a snapshot of ``root`` covers (see the module docstring)."""
    listed = _git_files(root)
    return listed if listed is not None else list(_walk(root))


def take_snapshot(
    root: Path,
    *,
    max_file_bytes: int = 2_000_000,
    max_total_bytes: int = 64_000_000,
    max_files: int = 20_000,
) -> Snapshot:
    """Snapshot ``root``'s files; blocking (it reads them). Never raises: a file that cannot
    be read is noted."""
    snap = Snapshot(root)
    total = 0
    for index, path in enumerate(list_files(root)):
        try:
            info = path.lstat()
        except OSError:
            continue
        if not path.is_file() or path.is_symlink():
            continue
        stamp = (info.st_size, info.st_mtime_ns)
        if (
            index >= max_files
            or info.st_size > max_file_bytes
            or total + info.st_size > max_total_bytes
        ):
            snap.noted[path] = stamp
            continue
        try:
            data = path.read_bytes()
        except OSError:
            snap.noted[path] = stamp
            continue
        if b"\0" in data[:8192]:
            snap.noted[path] = stamp
            continue
        snap.data[path] = data
        snap.stamps[path] = stamp
        total += len(data)
    return snap


def changed_since(snap: Snapshot) -> Changed:
    """What changed in the snapshot's workspace since it was taken; blocking, never raises."""
    files: list[tuple[Path, bytes | None]] = []
    unrecorded: list[Path] = []
    now = set(list_files(snap.root))
    for path, before in snap.data.items():
        try:
            info = path.lstat()
            if (info.st_size, info.st_mtime_ns) == snap.stamps[path]:
                continue  # untouched: not read again
            current = read_current(path)
        except OSError:
            current = None
        if current != before:
            files.append((path, before))
    for path, stamp in snap.noted.items():
        try:
            info = path.lstat()
            current_stamp: tuple[int, int] | None = (info.st_size, info.st_mtime_ns)
        except OSError:
            current_stamp = None
        if current_stamp != stamp:
            unrecorded.append(path)
    for path in sorted(now - snap.data.keys() - snap.noted.keys()):
        if path.is_file() and not path.is_symlink():
            files.append((path, None))  # a new file: undoing removes it
    return Changed(files, unrecorded)


__all__ = ["SKIPPED_DIRS", "Changed", "Snapshot", "changed_since", "list_files", "take_snapshot"]
