"""``@file`` mentions in a prompt: the files' text attached to it, and the workspace's files to
complete a mention from.

A mention is ``@`` followed by a path (no spaces), not preceded by a letter, a digit or ``/``
(so ``me@example.com`` is no mention); a path with a space is quoted (``@"notes 1.txt"``, or
the space typed as backslash and space), :mod:`agent.context.mention_spelling`. It names a
file relative to the workspace, or an absolute or ``~`` path. A mention that names no existing
file is left as typed (``@someone``). Each file is attached once, after the prompt, in a
``<file path="...">`` block; a file longer than :data:`MAX_ATTACH_CHARS` keeps its head and
tail with a note saying how much was left out.
A file on the file tools' deny list (:mod:`agent.tools.workspace`), or one that is not text,
refuses the whole prompt with one line (:class:`MentionRefused`): nothing of it is sent. Text is
UTF-8 only, as the ``read_file`` tool has it: a file in another encoding is refused the same way
(never attached with replacement characters).

The files offered for completion (:func:`workspace_files`) are git's view when the workspace is
in a git repository (``git ls-files``: tracked files and untracked ones ``.gitignore`` does not
ignore), else a walk that skips hidden directories and stops at :data:`MAX_LISTED` files.
:func:`fuzzy_rank` orders them for what is typed after the ``@``.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from agent.context.mention_spelling import MENTION
from agent.context.shrink import cut_middle
from agent.tools.workspace import PathCheck, Workspace

MAX_ATTACH_CHARS = 40_000
"""Most characters attached of one mentioned file (its middle is cut beyond that)."""

MAX_LISTED = 5_000
"""Most files a walk lists for completion (a git listing is not capped)."""

GIT_TIMEOUT_S = 5.0
"""Longest ``git ls-files`` may take before the walk is used instead, in seconds."""


TRAILING = ".,:;!?)]}'\""
"""Punctuation that ends a sentence after a mention rather than belonging to the path."""


class MentionRefused(Exception):
    """A mentioned file that may not be attached; ``message`` is one line saying which, why."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True, slots=True)
class Attachment:
    """One mentioned file.

    Attributes:
        mention: the path as typed after ``@``.
        path: the file, resolved.
        text: its text as attached (cut when it was too long).
        cut: True when its middle was left out.
    """

    mention: str
    path: Path
    text: str
    cut: bool


def mentions_in(text: str) -> list[str]:
    """The paths mentioned in ``text`` (as typed, unquoted), in order."""
    return [
        m.group(1) if m.group(1) is not None else m.group(2).replace("\\ ", " ")
        for m in MENTION.finditer(text)
    ]


def find_attachments(
    text: str, workspace: Workspace, cwd: Path, *, max_chars: int = MAX_ATTACH_CHARS
) -> list[Attachment]:
    """The files ``text`` mentions, read (see the module docstring).

    Args:
        text: the prompt.
        workspace: the boundary whose deny list holds.
        cwd: the workspace directory relative paths start from.
        max_chars: most characters attached of one file.

    Returns:
        one attachment per file mentioned (the first mention of each), in order.

    Raises:
        MentionRefused: a mentioned file is denied, unreadable or not text.
    """
    found: list[Attachment] = []
    seen: set[Path] = set()
    for typed in mentions_in(text):
        resolved = _existing(typed, workspace, cwd)
        if resolved is None:
            continue
        mention, check = resolved
        if check.path in seen:
            continue
        seen.add(check.path)
        if check.verdict == "denied":
            raise MentionRefused(
                f"@{mention} is refused: {check.path} is on desk's deny list (secrets and "
                "desk's own files are never attached); nothing was sent"
            )
        try:
            data = check.path.read_bytes()
        except OSError as exc:
            raise MentionRefused(
                f"@{mention} cannot be read: {exc.strerror or exc}; nothing was sent"
            ) from None
        if b"\x00" in data[:8192]:
            raise MentionRefused(f"@{mention} is not a text file; nothing was sent")
        try:
            whole = data.decode("utf-8")  # read_file's rule: UTF-8 text or nothing
        except UnicodeDecodeError:
            raise MentionRefused(
                f"@{mention} is not UTF-8 text (binary or other encoding); nothing was sent"
            ) from None
        kept = cut_middle(whole, max_chars)
        found.append(Attachment(mention, check.path, kept, kept != whole))
    return found


def with_attachments(text: str, attachments: Sequence[Attachment]) -> str:
    """The prompt as sent: ``text``, then each file in a ``<file path="...">`` block."""
    if not attachments:
        return text
    blocks = []
    for item in attachments:
        note = " (cut: its middle is left out)" if item.cut else ""
        body = item.text if item.text.endswith("\n") else item.text + "\n"
        blocks.append(f'<file path="{item.mention}"{note}>\n{body}</file>')
    return text + "\n\n" + "\n\n".join(blocks)


def mentionable(path: str) -> bool:
    """True when a mention can name ``path`` (:func:`spelled`): printable, no quote, and valid
    UTF-8 (a name that is not, as the file system gives it, would reach the prompt as ``�``
    and name no file: offered for completion, it was then dropped without a word)."""
    return bool(path) and '"' not in path and path.isprintable() and _utf8(path)


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def workspace_files(root: Path, *, limit: int = MAX_LISTED) -> list[str]:
    """The workspace's files for completion, relative to ``root``, sorted (see the module
    docstring); only those a mention can name (:func:`mentionable`); never raises (an
    unreadable directory is skipped)."""
    listed = _git_files(root)
    if listed is not None:
        return sorted(name for name in listed if mentionable(name))
    found: list[str] = []
    for directory, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        base = Path(directory).relative_to(root)
        for name in sorted(files):
            path = str(base / name) if base != Path(".") else name
            if mentionable(path):
                found.append(path)
            if len(found) >= limit:
                return sorted(found)
    return sorted(found)


def fuzzy_rank(query: str, paths: Iterable[str], limit: int = 50) -> list[str]:
    """``paths`` that hold the characters of ``query`` in order (case-insensitive), best first:
    a match inside the file name before one spread over directories, then tighter matches,
    then shorter paths; "" matches everything (shortest first)."""
    wanted = query.lower()
    scored: list[tuple[tuple[int, int, int, str], str]] = []
    for path in paths:
        score = _score(wanted, path)
        if score is not None:
            scored.append(((*score, len(path), path), path))
    scored.sort(key=lambda item: item[0])
    return [path for _key, path in scored[:limit]]


def _score(query: str, path: str) -> tuple[int, int] | None:
    """(0 when the whole query is in the file name's part else 1, the span matched), or None
    when ``path`` does not hold the query's characters in order."""
    lowered = path.lower()
    name_at = lowered.rfind("/") + 1
    if query in lowered[name_at:]:
        return 0, len(query)
    start = -1
    at = 0
    for char in query:
        at = lowered.find(char, at)
        if at < 0:
            return None
        if start < 0:
            start = at
        at += 1
    return 1, at - max(start, 0)


def _existing(typed: str, workspace: Workspace, cwd: Path) -> tuple[str, PathCheck] | None:
    """The file ``typed`` names (trailing punctuation dropped when that names a file), or None."""
    candidates = [typed]
    stripped = typed.rstrip(TRAILING)
    if stripped and stripped != typed:
        candidates.append(stripped)
    for candidate in candidates:
        check = workspace.check(candidate, cwd)
        if check.path.is_file():
            return candidate, check
    return None


def _git_files(root: Path) -> list[str] | None:
    """``git ls-files`` of ``root`` (tracked, and untracked not ignored), or None when it is
    not in a git repository or git is missing or fails."""
    try:
        done = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=root,
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    names = done.stdout.decode("utf-8", errors="replace").split("\0")
    return sorted({name for name in names if name and (root / name).is_file()})
