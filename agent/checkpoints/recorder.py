"""A turn's checkpoint: what each file held before the turn's first change to it.

:class:`TurnRecorder` is the :class:`~agent.tools.changes.ChangeRecorder` of one turn. For a
call that names its files (``write_file``, ``edit_file``, ``apply_patch``) it keeps each file's
bytes before the call runs (only the first time the turn touches it: what the turn found is
what ``/undo`` restores), and once the call is over, a hash of what each holds then. For a
``shell`` call it snapshots the workspace (:mod:`agent.checkpoints.snapshot`) and, once the
command is over, records the files it changed with what they held before. A stopped call is
recorded the same way: its partial changes are undone like whole ones.

Where the records go is the :class:`CheckpointSink`'s business (the gateway writes them to
the session store before the call runs). A sink that fails is said in one line on the log and
the call runs all the same: a checkpoint is a convenience, never a reason to lose a turn.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from agent.checkpoints.diff import read_current, sha_of
from agent.checkpoints.snapshot import changed_since, take_snapshot
from agent.checkpoints.stored_path import stored_path
from agent.tools.changes import Finish

log = logging.getLogger(__name__)

UNRECORDED_SHA = "-"
"""The ``after_sha`` of a file a command changed that was too large or binary to keep."""


class CheckpointSink(Protocol):
    """Where a turn's checkpoint records go (blocking calls; they may raise)."""

    def record_before(self, path: str, before_data: bytes | None) -> None:
        """What ``path`` held before the turn's first change to it (None: no file)."""
        ...

    def record_after(self, path: str, after_sha: str) -> None:
        """The SHA-256 of what ``path`` holds once the call is over ("" no file)."""
        ...


class TurnRecorder:
    """The checkpoint recorder of one turn (thread-safe).

    Args:
        root: the workspace (what a shell command may change).
        sink: where the records go.
    """

    def __init__(self, root: Path, sink: CheckpointSink) -> None:
        self._root = root
        self._sink = sink
        self._recorded: set[Path] = set()
        self._lock = threading.Lock()

    @property
    def recorded(self) -> frozenset[Path]:
        """The files recorded so far."""
        with self._lock:
            return frozenset(self._recorded)

    def _first(self, path: Path) -> bool:
        with self._lock:
            if path in self._recorded:
                return False
            self._recorded.add(path)
            return True

    def before(self, paths: Sequence[Path] | None) -> Finish:
        """Record ``paths`` now (None: snapshot the workspace); returns the call's finish."""
        if paths is None:
            return self._before_command()
        for path in paths:
            try:
                data = read_current(path)
            except OSError as exc:
                log.warning("checkpoint: cannot read %s before the change (%s)", path, exc)
                continue
            if self._first(path):
                self._record_before(path, data)

        def finish() -> None:
            for path in paths:
                try:
                    after = sha_of(read_current(path))
                except OSError:
                    continue
                self._record_after(path, after)

        return finish

    def _before_command(self) -> Finish:
        snap = take_snapshot(self._root)

        def finish() -> None:
            try:
                changed = changed_since(snap)
            except Exception as exc:  # never lose the turn over a checkpoint
                log.warning("checkpoint: cannot compare the workspace after a command (%s)", exc)
                return
            for path, before in changed.files:
                if self._first(path):
                    self._record_before(path, before)
                try:
                    after = sha_of(read_current(path))
                except OSError:
                    continue
                self._record_after(path, after)
            for path in changed.unrecorded:
                if self._first(path):
                    self._record_before(path, None)
                    self._record_after(path, UNRECORDED_SHA)

        return finish

    def _record_before(self, path: Path, data: bytes | None) -> None:
        try:
            self._sink.record_before(stored_path(path), data)
        except Exception as exc:  # a store away: the change goes on, unrecorded
            log.warning("checkpoint: cannot record %s (%s)", path, exc)

    def _record_after(self, path: Path, after_sha: str) -> None:
        try:
            self._sink.record_after(stored_path(path), after_sha)
        except Exception as exc:
            log.warning("checkpoint: cannot record %s (%s)", path, exc)


__all__ = ["UNRECORDED_SHA", "CheckpointSink", "TurnRecorder"]
