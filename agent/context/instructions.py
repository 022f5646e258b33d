"""Project instructions: the ``AGENTS.md`` files a session's system message carries.

The files are looked for in the workspace and in each directory above it up to the root of the
repository it lies in (the nearest directory holding a ``.git`` entry; without one, the
workspace alone). In each directory ``AGENTS.md`` is read, or ``CLAUDE.md`` when there is no
``AGENTS.md``. They are joined outermost first, the workspace's own file last (the nearest
instructions are read last, so they win where two disagree), each under a heading naming it.
Text that is not valid UTF-8 is decoded with replacement characters; a file larger than
:data:`MAX_FILE_CHARS` keeps its head and tail with a note saying how much was left out.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from agent.context.shrink import cut_middle

FILE_NAMES: tuple[str, ...] = ("AGENTS.md", "CLAUDE.md")
"""The names read in each directory, in order of preference (the first found is read)."""

MAX_FILE_CHARS = 32_000
"""Most characters kept of one instructions file (its middle is cut beyond that)."""

HEADING = "# Project instructions"
"""The first line of the instructions part of the system message."""

LIST_INTRO = (
    "The project's own instructions follow, from these files (the last is the nearest to the "
    "workspace; follow them):"
)
"""The line above the list of files read."""

INIT_PROMPT = (
    "Look at this workspace (list_dir, read_file on the README, the build files and a few "
    "sources) and write a starting AGENTS.md at its root with write_file: what the project is, "
    "how it is laid out, how to build, test and lint it (the exact commands), and the "
    "conventions its code follows. Keep it short (under 60 lines), factual and specific to "
    "this project; do not invent commands you did not see. If an AGENTS.md exists already, "
    "read it first and improve it instead."
)
"""The prompt ``/init`` sends: the model looks at the workspace and writes ``AGENTS.md``
(its ``write_file`` asks the person first, like every write)."""


@dataclass(frozen=True, slots=True)
class ProjectInstructions:
    """The instructions files found for a workspace.

    Attributes:
        files: the files read, outermost first (absolute paths).
        text: the system message's part holding them ("" when none was found).
    """

    files: tuple[Path, ...] = ()
    text: str = ""

    def names(self, workspace: Path) -> list[str]:
        """The files as a person reads them: relative to ``workspace`` where possible."""
        return [_shown(path, workspace) for path in self.files]


def repository_root(start: Path) -> Path | None:
    """The nearest directory at or above ``start`` that holds a ``.git`` entry, or None."""
    for directory in (start, *start.parents):
        if (directory / ".git").exists():
            return directory
    return None


def instruction_dirs(workspace: Path) -> list[Path]:
    """The directories searched for ``workspace``, outermost first (the workspace last)."""
    here = workspace.resolve()
    root = repository_root(here)
    if root is None:
        return [here]
    dirs = [here]
    for parent in here.parents:
        if not parent.is_relative_to(root):
            break
        dirs.append(parent)
    return list(reversed(dirs))


def find_instructions(workspace: Path) -> ProjectInstructions:
    """Read the project instructions of ``workspace`` (see the module docstring).

    Args:
        workspace: the session's workspace directory.

    Returns:
        the files read and the text to add to the system message; empty when none was
        found. A file that cannot be read is left out (never raises).
    """
    files: list[Path] = []
    parts: list[str] = []
    for directory in instruction_dirs(workspace):
        found = _read_first(directory, FILE_NAMES)
        if found is None:
            continue
        path, text = found
        files.append(path)
        parts.append(f"## {_shown(path, workspace.resolve())}\n\n{text.strip()}")
    if not parts:
        return ProjectInstructions()
    listed = "".join(f"- {_shown(path, workspace.resolve())}\n" for path in files)
    intro = f"{HEADING}\n\n{LIST_INTRO}\n{listed}\n"
    return ProjectInstructions(tuple(files), intro + "\n\n".join(parts))


def files_named(system: str) -> list[str]:
    """The instructions files a system message made by :func:`system_text` names, as shown
    (relative to the workspace); [] when it carries no project instructions."""
    at = system.find(f"{HEADING}\n\n{LIST_INTRO}\n")
    if at < 0:
        return []
    lines = system[at:].splitlines()[3:]
    names: list[str] = []
    for line in lines:
        if not line.startswith("- "):
            break
        names.append(line[2:])
    return names


def system_text(base: str | None, instructions: ProjectInstructions) -> str | None:
    """The system message of a new session: ``base`` (the configured system prompt), then the
    project instructions; None when both are empty."""
    pieces = [piece for piece in (base or "", instructions.text) if piece]
    return "\n\n".join(pieces) if pieces else None


def _read_first(directory: Path, names: Sequence[str]) -> tuple[Path, str] | None:
    for name in names:
        path = directory / name
        try:
            if not path.is_file():
                continue
            data = path.read_bytes()
        except OSError:
            continue
        text = data.decode("utf-8", errors="replace")
        return path, cut_middle(text, MAX_FILE_CHARS)
    return None


def _shown(path: Path, workspace: Path) -> str:
    return os.path.relpath(path, workspace)
