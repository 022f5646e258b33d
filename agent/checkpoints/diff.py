"""Unified diffs of whole files, as ``/undo``, ``/diff`` and the approval of a patch show them."""

from __future__ import annotations

import difflib
import hashlib
from dataclasses import dataclass
from pathlib import Path

from agent.valid_text import valid_text

ABSENT_SHA = ""
"""The hash recorded for "no file there"."""


def sha_of(data: bytes | None) -> str:
    """SHA-256 (hex) of ``data``; :data:`ABSENT_SHA` for None (no file)."""
    return ABSENT_SHA if data is None else hashlib.sha256(data).hexdigest()


def read_current(path: Path) -> bytes | None:
    """What ``path`` holds now: its bytes, or None when no regular file is there.

    Raises:
        OSError: it exists but cannot be read.
    """
    try:
        return path.read_bytes() if path.is_file() else None
    except FileNotFoundError:
        return None


def shown_path(path: Path, root: Path) -> str:
    """``path`` relative to ``root`` when inside it, else as it is; valid text (a name that
    is not UTF-8 shows ``�`` where its bytes are not)."""
    try:
        return valid_text(str(path.relative_to(root)))
    except ValueError:
        return valid_text(str(path))


@dataclass(frozen=True, slots=True)
class FileDiff:
    """One file's change.

    Attributes:
        text: the unified diff (``--- a/x`` / ``+++ b/x`` headers, three lines of context), or
            one line for a binary file.
        added: lines added.
        removed: lines removed.
    """

    text: str
    added: int
    removed: int


def _lines(data: bytes | None) -> list[str] | None:
    if data is None:
        return []
    if b"\0" in data[:8192]:
        return None
    try:
        return data.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        return None


def file_diff(name: str, old: bytes | None, new: bytes | None) -> FileDiff:
    """The diff from ``old`` to ``new`` (None: no file) of the file shown as ``name``."""
    old_lines, new_lines = _lines(old), _lines(new)
    if old_lines is None or new_lines is None:
        return FileDiff(f"Binary file {name} changed", 0, 0)
    before = "/dev/null" if old is None else f"a/{name}"
    after = "/dev/null" if new is None else f"b/{name}"
    lines = list(difflib.unified_diff(old_lines, new_lines, before, after, lineterm=""))
    if not lines and old != new:
        return FileDiff(f"--- {before}\n+++ {after}\n(only the newline at the end changes)", 0, 0)
    added = sum(1 for line in lines[2:] if line.startswith("+"))
    removed = sum(1 for line in lines[2:] if line.startswith("-"))
    return FileDiff("\n".join(lines), added, removed)


__all__ = ["ABSENT_SHA", "FileDiff", "file_diff", "read_current", "sha_of", "shown_path"]
