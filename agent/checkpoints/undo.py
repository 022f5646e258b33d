"""Undoing a turn's changes to the workspace, and the session's diff, from checkpoint rows.

A turn's rows (one per file, :class:`~agent.store.rows.CheckpointRow`) say what each file held
before the turn and a hash of what it held after. :func:`undo_files` puts each file back
(atomically: a temporary file and ``os.replace``; a file the turn created is removed), or none
of them when one changed since the turn (its hash differs: someone else wrote it, and their
work is not desk's to throw away), and returns the diff it reverted, the files it wrote back
and those it removed (apart: a file removed was not "restored"), what it could not restore, and
whether the step is undone.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agent.checkpoints.diff import file_diff, read_current, sha_of, shown_path
from agent.checkpoints.recorder import UNRECORDED_SHA
from agent.checkpoints.stored_path import path_from_stored
from agent.store.rows import CheckpointRow
from agent.tools.files import fsync_dir, write_bytes_atomic


@dataclass(slots=True)
class UndoOutcome:
    """What undoing one step did.

    Attributes:
        diff: the unified diff it reverted (from the files as they were to as they are now).
        restored: the files written back with what they held before the turn (a file the turn
            deleted included), shown relative to the workspace.
        removed: the files the turn created, removed (shown relative to the workspace).
        not_restored: one line per file left as it is, saying why.
        complete: True when every file of the step holds what it held before the turn now
            (or never can: one too large to record), so the step counts as undone; False when
            a file was left as it is for a reason that can pass (changed since, unreadable,
            a write that failed): the step stays to undo.
    """

    diff: str = ""
    restored: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    not_restored: list[str] = field(default_factory=list)
    complete: bool = True


@dataclass(frozen=True, slots=True)
class _Change:
    path: Path
    name: str
    current: bytes | None
    before: bytes | None


def last_step(rows: Sequence[CheckpointRow]) -> list[CheckpointRow]:
    """The rows of the newest step not undone yet ([] when every step is undone)."""
    live = [row for row in rows if not row.undone]
    if not live:
        return []
    step = max(row.step for row in live)
    return [row for row in live if row.step == step]


def undo_files(rows: Sequence[CheckpointRow], root: Path) -> UndoOutcome:
    """Put back the files of one step, all or none; blocking, never raises (a failure is a
    line).

    Every file is checked first: when one changed since the turn (or cannot be read), nothing
    is written, so a refused undo leaves the workspace and the step as they were.

    Args:
        rows: the step's rows.
        root: the workspace, for the paths shown.
    """
    out = UndoOutcome()
    changes: list[_Change] = []
    blocked: list[str] = []
    for row in rows:
        path = path_from_stored(row.path)
        name = shown_path(path, root)
        if row.after_sha == UNRECORDED_SHA:
            out.not_restored.append(f"{name}: too large or binary to record before the change")
            continue
        try:
            current = read_current(path)
        except OSError as exc:
            blocked.append(f"{name}: cannot read it ({exc.strerror or exc})")
            continue
        if current == row.before_data:
            continue  # nothing to put back
        if row.after_sha is not None and sha_of(current) != row.after_sha:
            blocked.append(f"{name}: changed outside desk since the turn")
            continue
        changes.append(_Change(path, name, current, row.before_data))
    if blocked:
        out.not_restored = blocked + out.not_restored
        out.complete = False
        return out
    diffs: list[str] = []
    for change in changes:
        error = _restore(change.path, change.before)
        if error:
            out.not_restored.append(f"{change.name}: {error}")
            out.complete = False
            continue
        diffs.append(file_diff(change.name, change.current, change.before).text)
        (out.restored if change.before is not None else out.removed).append(change.name)
    out.diff = "\n".join(diffs)
    return out


def _restore(path: Path, data: bytes | None) -> str:
    """Put ``data`` at ``path`` (None: remove it); "" or why it failed."""
    if data is None:
        try:
            os.unlink(path)
        except FileNotFoundError:
            return ""
        except OSError as exc:
            return f"cannot remove it ({exc.strerror or exc})"
        with contextlib.suppress(OSError):
            fsync_dir(path.parent)
        return ""
    result = write_bytes_atomic(path, data)
    return result.content if result.is_error else ""


@dataclass(frozen=True, slots=True)
class SessionChanges:
    """What a session changed in the workspace (its steps not undone).

    Attributes:
        diff: the unified diff from the files as the session found them to now.
        files: the files that differ, shown relative to the workspace.
        added: lines added.
        removed: lines removed.
    """

    diff: str
    files: list[str]
    added: int
    removed: int


def session_changes(rows: Sequence[CheckpointRow], root: Path) -> SessionChanges:
    """The session's diff: each file's first recorded content (of the steps not undone) to
    what it holds now; blocking, never raises (an unreadable file is left out)."""
    first: dict[str, bytes | None] = {}
    for row in rows:
        if not row.undone and row.after_sha != UNRECORDED_SHA:
            first.setdefault(row.path, row.before_data)
    diffs: list[str] = []
    files: list[str] = []
    added = removed = 0
    for raw, before in first.items():
        path = path_from_stored(raw)
        try:
            current = read_current(path)
        except OSError:
            continue
        if current == before:
            continue
        name = shown_path(path, root)
        change = file_diff(name, before, current)
        diffs.append(change.text)
        files.append(name)
        added += change.added
        removed += change.removed
    return SessionChanges("\n".join(diffs), files, added, removed)


__all__ = ["SessionChanges", "UndoOutcome", "last_step", "session_changes", "undo_files"]
