"""The patch format of ``apply_patch``, and applying its hunks to a file's text (pure functions).

The format is codex's (``openai/codex``, ``codex-rs/apply-patch``: its
``apply_patch_tool_instructions.md`` and its parser)::

    *** Begin Patch
    *** Add File: path/new.txt
    +first line of the new file
    *** Delete File: path/old.txt
    *** Update File: path/app.py
    *** Move to: path/main.py
    @@ def greet():
    -    print("Hi")
    +    print("Hello")
    *** End Patch

An update's hunks start with ``@@`` (optionally followed by one line of the file that comes
before the change, to find the right place); each line of a hunk starts with `` `` (context),
``-`` (removed) or ``+`` (added); ``*** End of File`` after a hunk pins it to the file's end.
As codex does, the parser is lenient where models often slip: spaces around the markers, a
first hunk without ``@@``, a blank line read as an empty context line, and the whole patch
wrapped in a ``<<'EOF'`` heredoc. Lines of a hunk are found in the file as written, then
ignoring trailing white space, then ignoring white space at both ends.

Nothing here touches the disk: :func:`parse_patch` reads the text, :func:`apply_hunks` computes
a file's new text; :mod:`agent.tools.edits` does the reading and the atomic writing.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

BEGIN = "*** Begin Patch"
END = "*** End Patch"
ADD = "*** Add File: "
DELETE = "*** Delete File: "
UPDATE = "*** Update File: "
MOVE = "*** Move to: "
END_OF_FILE = "*** End of File"


class PatchError(ValueError):
    """A patch that cannot be read, or whose hunks do not fit the file; the message is one
    or two lines meant for the model (it names the line of the patch or the file)."""


@dataclass(frozen=True, slots=True)
class Hunk:
    """One ``@@`` hunk of an update.

    Attributes:
        context: the line after ``@@ `` (a line found before the change), or None.
        old: the lines the hunk replaces (context and ``-`` lines, in order).
        new: the lines they become (context and ``+`` lines, in order).
        end_of_file: the old lines must end the file (``*** End of File``).
    """

    context: str | None
    old: tuple[str, ...]
    new: tuple[str, ...]
    end_of_file: bool = False


@dataclass(frozen=True, slots=True)
class AddFile:
    """``*** Add File``: create ``path`` with ``content`` (every line ends with a newline)."""

    path: str
    content: str


@dataclass(frozen=True, slots=True)
class DeleteFile:
    """``*** Delete File``: remove ``path``."""

    path: str


@dataclass(frozen=True, slots=True)
class UpdateFile:
    """``*** Update File``: change ``path`` by its ``hunks`` (in file order), and move it to
    ``move_to`` when that is not None."""

    path: str
    hunks: tuple[Hunk, ...]
    move_to: str | None = None


FileOp = AddFile | DeleteFile | UpdateFile
"""One file section of a patch."""


def op_paths(op: FileOp) -> list[str]:
    """Every path one section touches, as written (an update's move target included)."""
    if isinstance(op, UpdateFile) and op.move_to is not None:
        return [op.path, op.move_to]
    return [op.path]


def parse_patch(text: str) -> tuple[FileOp, ...]:
    """Read a patch.

    Args:
        text: the whole patch, ``*** Begin Patch`` to ``*** End Patch``.

    Returns:
        its file sections, in order (at least one).

    Raises:
        PatchError: a missing marker, an unknown header, an empty update, a line that belongs
            to no hunk; the message names the line number of the patch.
    """
    # Lines end at "\n" only (a form feed or a U+2028 inside a line stays in it); a "\r"
    # before it goes with the line ending.
    lines = [line.removesuffix("\r") for line in text.strip().split("\n")]
    heredoc = lines[0].strip() in ("<<EOF", "<<'EOF'", '<<"EOF"') if lines else False
    if heredoc and len(lines) >= 4 and lines[-1].strip().endswith("EOF"):
        lines = lines[1:-1]
    if not lines or lines[0].strip() != BEGIN:
        raise PatchError(f"invalid patch: the first line must be '{BEGIN}'")
    if len(lines) < 2 or lines[-1].strip() != END:
        raise PatchError(f"invalid patch: the last line must be '{END}'")
    body = lines[1:-1]
    ops: list[FileOp] = []
    at = 0
    while at < len(body):
        if not body[at].strip():
            at += 1
            continue
        op, used = _parse_op(body, at)
        ops.append(op)
        at += used
    if not ops:
        raise PatchError("invalid patch: it changes no file (no Add, Delete or Update section)")
    return tuple(ops)


def _line_no(at: int) -> int:
    return at + 2  # 1-based, after the Begin line


def _parse_op(body: Sequence[str], at: int) -> tuple[FileOp, int]:
    header = body[at].strip()
    probe = header + " "  # "*** Add File:" with no path still reads as its header
    if probe.startswith(ADD):
        path = _path(probe[len(ADD) :], at)
        added: list[str] = []
        used = 1
        while at + used < len(body) and body[at + used].startswith("+"):
            added.append(body[at + used][1:] + "\n")
            used += 1
        return AddFile(path, "".join(added)), used
    if probe.startswith(DELETE):
        return DeleteFile(_path(probe[len(DELETE) :], at)), 1
    if probe.startswith(UPDATE):
        return _parse_update(body, at, _path(probe[len(UPDATE) :], at))
    raise PatchError(
        f"invalid patch at line {_line_no(at)}: '{header}' is not a file header; use "
        f"'{ADD}PATH', '{DELETE}PATH' or '{UPDATE}PATH'"
    )


def _path(raw: str, at: int) -> str:
    path = raw.strip()
    if not path:
        raise PatchError(f"invalid patch at line {_line_no(at)}: the header names no path")
    return path


def _parse_update(body: Sequence[str], at: int, path: str) -> tuple[UpdateFile, int]:
    used = 1
    move_to = None
    if at + used < len(body) and body[at + used].strip().startswith(MOVE):
        move_to = _path(body[at + used].strip()[len(MOVE) :], at + used)
        used += 1
    hunks: list[Hunk] = []
    while at + used < len(body):
        line = body[at + used]
        if line.startswith("*"):
            break
        if not line.strip():
            used += 1  # a blank line between hunks
            continue
        hunk, taken = _parse_hunk(body, at + used, first=not hunks)
        hunks.append(hunk)
        used += taken
    if not hunks:
        raise PatchError(
            f"invalid patch at line {_line_no(at)}: the update of '{path}' has no hunk"
        )
    return UpdateFile(path, tuple(hunks), move_to), used


def _parse_hunk(body: Sequence[str], at: int, *, first: bool) -> tuple[Hunk, int]:
    line = body[at]
    context: str | None = None
    start = 0
    if line.strip() == "@@":
        start = 1
    elif line.startswith("@@ "):
        context, start = line[3:], 1
    elif not first:
        raise PatchError(
            f"invalid patch at line {_line_no(at)}: expected a '@@' hunk header, got '{line}'"
        )
    old: list[str] = []
    new: list[str] = []
    taken = start
    end_of_file = False
    while at + taken < len(body):
        line = body[at + taken]
        if line.rstrip() == END_OF_FILE:
            if taken == start:
                raise PatchError(f"invalid patch at line {_line_no(at + taken)}: empty hunk")
            end_of_file = True
            taken += 1
            break
        kind = line[:1]
        if kind == "" or kind == " ":
            old.append(line[1:])
            new.append(line[1:])
        elif kind == "-":
            old.append(line[1:])
        elif kind == "+":
            new.append(line[1:])
        elif taken == start:
            raise PatchError(
                f"invalid patch at line {_line_no(at + taken)}: '{line}' is not a hunk line; "
                "every line of a hunk starts with ' ' (context), '-' (removed) or '+' (added)"
            )
        else:
            break  # the next hunk or section
        taken += 1
    if taken == start:
        raise PatchError(f"invalid patch at line {_line_no(at)}: the hunk has no lines")
    return Hunk(context, tuple(old), tuple(new), end_of_file), taken


def render_patch(ops: Sequence[FileOp]) -> str:
    """The text of a patch (the inverse of :func:`parse_patch` for sections it can express:
    an added file's content ends with a newline, hunks have a header)."""
    out = [BEGIN]
    for op in ops:
        if isinstance(op, AddFile):
            out.append(ADD + op.path)
            added = op.content.split("\n")
            out.extend("+" + line for line in (added[:-1] if added[-1] == "" else added))
        elif isinstance(op, DeleteFile):
            out.append(DELETE + op.path)
        else:
            out.append(UPDATE + op.path)
            if op.move_to is not None:
                out.append(MOVE + op.move_to)
            for hunk in op.hunks:
                out.append("@@" if hunk.context is None else "@@ " + hunk.context)
                out.extend(_hunk_lines(hunk))
                if hunk.end_of_file:
                    out.append(END_OF_FILE)
    out.append(END)
    return "\n".join(out) + "\n"


def _hunk_lines(hunk: Hunk) -> list[str]:
    """A hunk's body: the shortest edit between old and new as context, ``-`` and ``+``."""
    lines: list[str] = []
    matcher = difflib.SequenceMatcher(a=hunk.old, b=hunk.new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            lines.extend(" " + line for line in hunk.old[i1:i2])
            continue
        lines.extend("-" + line for line in hunk.old[i1:i2])
        lines.extend("+" + line for line in hunk.new[j1:j2])
    return lines


def apply_hunks(path: str, text: str, hunks: Sequence[Hunk]) -> str:
    """The file's new text after ``hunks``.

    Every hunk is found first (each after the one before it); only then is anything replaced,
    so a hunk that does not fit changes nothing. A file whose every line ends in ``\\r\\n``
    keeps its line ending; the result ends with one.

    Args:
        path: the file, as the patch names it (for messages).
        text: its current text.
        hunks: the update's hunks, in file order.

    Raises:
        PatchError: a hunk's ``@@`` line or its old lines are not in the file (after the
            previous hunk); the message quotes what was looked for.
    """
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    crlf = bool(lines) and all(line.endswith("\r") for line in lines)
    newline = "\r\n" if crlf else "\n"
    if crlf:  # a CRLF file stays one; in a mixed one, the lines a hunk writes end in "\n"
        lines = [line[:-1] for line in lines]
    replacements: list[tuple[int, int, tuple[str, ...]]] = []
    at = 0
    for hunk in hunks:
        if hunk.context is not None:
            found = _seek(lines, (hunk.context,), at, end_of_file=False)
            if found is None:
                raise PatchError(f"cannot apply the patch to {path}: no line '{hunk.context}'")
            at = found + 1
        if not hunk.old:
            replacements.append((len(lines), 0, hunk.new))
            continue
        old, new = hunk.old, hunk.new
        found = _seek(lines, old, at, end_of_file=hunk.end_of_file)
        if found is None and old[-1] == "":
            old, new = old[:-1], new[:-1] if new and new[-1] == "" else new
            found = _seek(lines, old, at, end_of_file=hunk.end_of_file)
        if found is None:
            wanted = "\n".join(hunk.old)
            raise PatchError(
                f"cannot apply the patch to {path}: these lines are not in it:\n{wanted}"
            )
        replacements.append((found, len(old), new))
        at = found + len(old)
    for start, length, new in sorted(replacements, reverse=True):
        lines[start : start + length] = list(new)
    return newline.join(lines) + newline if lines else ""


_Compare = Callable[[str, str], bool]
_COMPARES: tuple[_Compare, ...] = (
    lambda a, b: a == b,
    lambda a, b: a.rstrip() == b.rstrip(),
    lambda a, b: a.strip() == b.strip(),
)


def _seek(
    lines: Sequence[str], pattern: Sequence[str], at: int, *, end_of_file: bool
) -> int | None:
    """Where ``pattern`` starts in ``lines`` at or after ``at`` (exactly, then ignoring trailing
    and then surrounding white space); with ``end_of_file``, only where it ends the file."""
    if len(pattern) > len(lines):
        return None
    last = len(lines) - len(pattern)
    starts = [last] if end_of_file and last >= at else range(at, last + 1)
    for same in _COMPARES:
        for start in starts:
            if all(same(lines[start + i], p) for i, p in enumerate(pattern)):
                return start
    return None


__all__ = [
    "AddFile",
    "DeleteFile",
    "FileOp",
    "Hunk",
    "PatchError",
    "UpdateFile",
    "apply_hunks",
    "op_paths",
    "parse_patch",
    "render_patch",
]
