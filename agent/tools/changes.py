"""What a tool call will change on disk, and the seam through which a host records it first.

The editing tools (``edit_file``, ``apply_patch``) work out their whole change before they
write anything: a :class:`FileChange` per file, each with the bytes it holds now and the bytes
it will hold (or None: the file is removed). A change that cannot be made (an ``old`` text
that is absent, a hunk that does not fit) is an :class:`EditRefused` with a message for the
model, so nothing is asked and nothing is written.

Every tool that may change the workspace says which files (:class:`ChangesFiles`): the file
tools name them exactly; ``shell`` says None, meaning any file of the workspace. Before such a
call runs, the tool batch hands them to the turn's :class:`ChangeRecorder`, which keeps what
the files hold (a checkpoint, so the turn can be undone), and calls what it returns once the
call is over, whether it ended, failed or was stopped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable


class EditRefused(ValueError):
    """A change a tool call asks for that cannot be made; the message (one or two lines) says
    why, for the model. Nothing was written."""


@dataclass(frozen=True, slots=True)
class FileChange:
    """One file a call changes.

    Attributes:
        path: the absolute, resolved path.
        before: its bytes now, or None when it does not exist.
        after: its bytes after the call, or None when the call removes it.
    """

    path: Path
    before: bytes | None
    after: bytes | None


@runtime_checkable
class ChangesFiles(Protocol):
    """A tool whose calls may change files of the workspace."""

    def changed_paths(self, args: dict[str, Any], cwd: Path) -> list[Path] | None:
        """The resolved paths a call with these (checked) arguments may change; None when it
        may change any file (a shell command)."""
        ...


@runtime_checkable
class PlansChanges(Protocol):
    """A tool that works its whole change out before it writes (the editing tools)."""

    def plan(self, args: dict[str, Any], cwd: Path) -> list[FileChange]:
        """The change a call would make now; blocking (it reads the files).

        Raises:
            EditRefused: the change cannot be made (the message is for the model).
        """
        ...


Finish = Callable[[], None]
"""Called once a recorded call is over (ended, failed or stopped); blocking, never raises."""


class ChangeRecorder(Protocol):
    """Keeps what files hold before a tool call changes them (a turn's checkpoint)."""

    def before(self, paths: Sequence[Path] | None) -> Finish:
        """Record ``paths`` (None: the whole workspace) as they are now; blocking.

        Returns:
            what to call once the call is over (it records what changed).
        """
        ...


__all__ = [
    "ChangeRecorder",
    "ChangesFiles",
    "EditRefused",
    "FileChange",
    "Finish",
    "PlansChanges",
]
