"""What an approval prompt shows will change: a ``write_file`` call's diff against the file on disk.

The gateway reads the file (it runs the tools, so it sees the same disk the call will write;
a frontend in another process or on another machine may not), and sends the change in the
``approval.request`` event:

- ``diff``: the file exists and is text: a unified diff (:func:`difflib.unified_diff`, three
  lines of context) from the file on disk to the call's content, at most
  :data:`DIFF_LINES` lines;
- ``new_file``: nothing is there yet: the content's first :data:`NEW_FILE_LINES` lines;
- ``""``: nothing to show (another tool; or a file too large, binary or unreadable: the note
  says which, and that it will be replaced).

The note gives the size of the change in one line: ``+12 −3 lines · 2,345 → 2,410 bytes``,
``new file · 85 lines · 3,210 bytes``. Text is sent as read: the frontend makes it safe to show.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

PreviewKind = Literal["", "diff", "new_file"]
"""What :attr:`ChangePreview.text` holds (see the module docstring)."""

DIFF_LINES = 2_000
"""Most lines of a diff sent with an approval (a longer one is cut, and the note says so)."""

NEW_FILE_LINES = 40
"""Lines of a new file's content sent with its approval."""

READ_LIMIT_BYTES = 2_000_000
"""Largest file on disk compared (a larger one is only named as replaced)."""


@dataclass(frozen=True, slots=True)
class ChangePreview:
    """What a tool call will change, for its approval prompt.

    Attributes:
        kind: ``diff``, ``new_file`` or "" (nothing to show).
        text: the diff, or the new file's first lines ("" when ``kind`` is "").
        note: one line giving the size of the change ("" for a call that changes no file).
    """

    kind: PreviewKind = ""
    text: str = ""
    note: str = ""


NO_PREVIEW = ChangePreview()
"""The preview of a call that writes no file."""


def change_preview(tool: str, args: dict[str, Any]) -> ChangePreview:
    """The preview of a call: a ``write_file``'s change, else :data:`NO_PREVIEW`.

    Args:
        tool: the tool's name.
        args: the call's parsed arguments (a file tool's ``path`` resolved by the workspace
            boundary before the approval is asked).
    """
    path, content = args.get("path"), args.get("content")
    if tool != "write_file" or not isinstance(path, str) or not isinstance(content, str):
        return NO_PREVIEW
    return write_preview(Path(path), content)


def write_preview(path: Path, content: str) -> ChangePreview:
    """What writing ``content`` to ``path`` changes (never raises: a file that cannot be read
    is named in the note instead).

    Args:
        path: the file the call writes.
        content: its whole new content.
    """
    new_bytes = len(content.encode("utf-8"))
    if not path.exists():
        return _new_file(content, new_bytes)
    try:
        size = path.stat().st_size
        if not path.is_file():
            return ChangePreview(note=f"{path.name} is not a regular file; the call will fail")
        if size > READ_LIMIT_BYTES:
            return ChangePreview(note=f"replaces a file of {size:,} bytes (too large to compare)")
        data = path.read_bytes()
    except OSError as exc:
        return ChangePreview(note=f"replaces a file that cannot be read ({exc.strerror or exc})")
    try:
        old = data.decode("utf-8")
    except UnicodeDecodeError:
        old = None
    if old is None or "\x00" in old:
        return ChangePreview(note=f"replaces a binary file of {len(data):,} bytes")
    return _diff(path.name, old, content, len(data), new_bytes)


def _new_file(content: str, size: int) -> ChangePreview:
    lines = content.splitlines()
    head = "\n".join(lines[:NEW_FILE_LINES])
    shown = f" (first {NEW_FILE_LINES} shown)" if len(lines) > NEW_FILE_LINES else ""
    noun = "line" if len(lines) == 1 else "lines"
    note = f"new file · {len(lines):,} {noun}{shown} · {size:,} bytes"
    return ChangePreview("new_file", head, note)


def _diff(name: str, old: str, new: str, old_bytes: int, new_bytes: int) -> ChangePreview:
    sizes = f"{old_bytes:,} → {new_bytes:,} bytes"
    if old == new:
        return ChangePreview("diff", "", f"no change: the file already holds this · {sizes}")
    lines = list(
        difflib.unified_diff(
            old.splitlines(), new.splitlines(), f"a/{name}", f"b/{name}", lineterm=""
        )
    )
    if not lines:  # only the last line's newline differs
        return ChangePreview("diff", "", f"only the newline at the end changes · {sizes}")
    added = sum(1 for line in lines[2:] if line.startswith("+"))
    removed = sum(1 for line in lines[2:] if line.startswith("-"))
    cut = ""
    if len(lines) > DIFF_LINES:
        cut = f" · diff cut at {DIFF_LINES:,} of {len(lines):,} lines"
        lines = lines[:DIFF_LINES]
    return ChangePreview("diff", "\n".join(lines), f"+{added:,} −{removed:,} lines · {sizes}{cut}")
