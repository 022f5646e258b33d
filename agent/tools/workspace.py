"""The workspace boundary of the file tools: inside runs, outside asks, secrets are refused.

The workspace is the directory desk started in (or ``--workspace DIR``): the gateway's ``cwd``.
Every path a file tool would touch is resolved first (``~`` expanded, made absolute against the
working directory, ``..`` and every symbolic link resolved with ``os.path.realpath``), and the
resolved path decides:

* **inside** the workspace: ``read_file`` and ``list_dir`` run without asking (``write_file``
  asks everywhere, as it always did);
* **outside** it: every file tool asks the person first, and the approval prompt names the
  resolved path, so a link inside the workspace that points at ``/etc`` is seen for what it is;
* **denied**: refused with an error result the model can read, even when the person allowed
  the tool "always", and even when the host runs without approvals. A hard link to a denied
  file is denied too (the file's device and inode are compared, not only its path). The deny
  list (:func:`default_denied`) is short on purpose; it holds what no coding task needs to read
  or write and what leaks a secret the moment it reaches a model server:

  - desk's own files: its data directory (``$XDG_DATA_HOME/desk``, the session databases with
    everything ever said in them), its configuration directory (``$XDG_CONFIG_HOME/desk``: the
    config file may hold the model server's API key, and ``desk serve`` keeps its token there),
    and any database or token file the host names besides (``--db``, ``--token-file``), with
    SQLite's ``-wal``, ``-shm`` and ``-journal`` files and desk's ``-prompts`` (its prompt
    history);
  - login secrets: ``~/.ssh`` (private keys), ``~/.gnupg`` (private keys),
    ``~/.aws/credentials``, ``~/.netrc``;
  - the system's password hashes and privilege rules: ``/etc/shadow``, ``/etc/gshadow`` (and
    their ``-`` backups), ``/etc/sudoers`` and ``/etc/sudoers.d``.

The boundary covers the file tools only. The ``shell`` tool can read anything the user can, which
is why it always asks; the boundary does not pretend otherwise. Paths are checked when the call
is made and the tool then uses the resolved path it was checked against; a link swapped between
the two by another program is not guarded against (the model cannot do that without the shell).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from agent.home_path import expand_home
from agent.store.paths import PROMPTS_SUFFIX

Verdict = Literal["inside", "outside", "denied"]
"""Where a resolved path lies: in the workspace, outside it, or on the deny list."""

SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal", PROMPTS_SUFFIX)
"""Suffixes of the files kept next to a database: SQLite's (write-ahead log, shared memory,
journal) and desk's prompt history."""


@runtime_checkable
class TouchesPath(Protocol):
    """A tool whose calls read or write one path given in their arguments (the file tools)."""

    def path_argument(self, args: dict[str, Any]) -> str:
        """The path a call with these (schema-checked) arguments touches, as given."""
        ...


@runtime_checkable
class TouchesPaths(Protocol):
    """A tool whose calls touch several paths named inside their arguments (``apply_patch``)."""

    def path_arguments(self, args: dict[str, Any]) -> list[str]:
        """The paths a call touches, as given.

        Raises:
            ToolArgumentError: the arguments cannot be read for paths (the message says why).
        """
        ...


def _xdg(env: Mapping[str, str], name: str, fallback: str) -> Path:
    base = env.get(name, "")
    return Path(base) if base and os.path.isabs(base) else Path.home() / fallback


def default_denied(env: Mapping[str, str] | None = None) -> tuple[Path, ...]:
    """The deny list of the module docstring, for this user (not yet resolved).

    Args:
        env: the environment (``XDG_DATA_HOME``, ``XDG_CONFIG_HOME``); default ``os.environ``.

    Returns:
        the denied paths; each denies itself and everything under it.
    """
    env = os.environ if env is None else env
    home = Path.home()
    return (
        _xdg(env, "XDG_DATA_HOME", ".local/share") / "desk",
        _xdg(env, "XDG_CONFIG_HOME", ".config") / "desk",
        home / ".ssh",
        home / ".gnupg",
        home / ".aws" / "credentials",
        home / ".netrc",
        Path("/etc/shadow"),
        Path("/etc/shadow-"),
        Path("/etc/gshadow"),
        Path("/etc/gshadow-"),
        Path("/etc/sudoers"),
        Path("/etc/sudoers.d"),
    )


def with_side_files(paths: Iterable[Path]) -> tuple[Path, ...]:
    """``paths`` plus the SQLite side files of each (``x.db`` -> ``x.db-wal``, ...)."""
    out: list[Path] = []
    for path in paths:
        out.append(path)
        out.extend(path.with_name(path.name + suffix) for suffix in SQLITE_SIDE_FILES)
    return tuple(out)


def resolve(path: str | Path, cwd: Path) -> Path:
    """``path`` as the file system will find it: ``~`` expanded, absolute against ``cwd``,
    ``..`` and symbolic links resolved (a missing tail is kept as written)."""
    return Path(os.path.realpath(cwd / expand_home(path)))


@dataclass(frozen=True, slots=True)
class PathCheck:
    """What the boundary says about one path.

    Attributes:
        verdict: ``inside``, ``outside`` or ``denied``.
        path: the resolved path.
        root: the resolved workspace.
    """

    verdict: Verdict
    path: Path
    root: Path

    def reason(self, tool: str) -> str:
        """One line for the approval prompt or the model, e.g. ``read_file reads /etc/hosts,
        outside the workspace /home/me/project``."""
        if self.verdict == "denied":
            return (
                f"{tool} refused: {self.path} is on desk's deny list (secrets and desk's own "
                "files are never read or written by file tools); work inside the workspace "
                f"{self.root}"
            )
        where = "inside" if self.verdict == "inside" else "outside"
        return f"{tool} on {self.path}, {where} the workspace {self.root}"


@dataclass(frozen=True, slots=True)
class Workspace:
    """The boundary: a root directory and a deny list.

    Args:
        root: the workspace directory (resolved here).
        denied: paths refused always; each denies itself and everything under it (resolved
            here, so a deny list entry reached through a link is still denied).
    """

    root: Path
    denied: tuple[Path, ...] = field(default_factory=default_denied)

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Path(os.path.realpath(self.root)))
        resolved = {Path(os.path.realpath(p)) for p in self.denied}
        resolved |= {Path(os.path.abspath(p)) for p in self.denied}  # the link itself too
        object.__setattr__(self, "denied", tuple(sorted(resolved)))

    @classmethod
    def at(cls, root: Path, extra_denied: Iterable[Path] = ()) -> Workspace:
        """A workspace at ``root`` with the default deny list plus ``extra_denied`` (and the
        SQLite side files of each extra entry)."""
        return cls(root, default_denied() + with_side_files(extra_denied))

    def check(self, path: str | Path, cwd: Path) -> PathCheck:
        """Where ``path`` (as a tool call gave it, relative to ``cwd``) lies.

        Returns:
            the verdict with the resolved path.
        """
        resolved = resolve(path, cwd)
        if any(resolved == d or d in resolved.parents for d in self.denied):
            return PathCheck("denied", resolved, self.root)
        if self._same_file_as_denied(resolved):
            return PathCheck("denied", resolved, self.root)
        inside = resolved == self.root or self.root in resolved.parents
        return PathCheck("inside" if inside else "outside", resolved, self.root)

    def _same_file_as_denied(self, path: Path) -> bool:
        """True when ``path`` is a hard link of a denied file: another name of the same file
        (device and inode), which no path comparison can see. Only a file with more than one
        link can be one, so the deny list is looked at (its files, and those under its
        folders, at most :data:`MAX_DENIED_FILES`) only then."""
        try:
            seen = os.stat(path)
        except OSError:
            return False
        if not stat.S_ISREG(seen.st_mode) or seen.st_nlink < 2:
            return False
        return (seen.st_dev, seen.st_ino) in _identities(self.denied)


MAX_DENIED_FILES = 10_000
"""Most files under the deny list's folders whose identities are compared with a hard link."""


def _identities(denied: Iterable[Path]) -> set[tuple[int, int]]:
    """``(st_dev, st_ino)`` of every regular file on the deny list or under its folders."""
    found: set[tuple[int, int]] = set()
    for entry in denied:
        try:
            top = os.stat(entry)
        except OSError:
            continue
        if stat.S_ISREG(top.st_mode):
            found.add((top.st_dev, top.st_ino))
            continue
        if not stat.S_ISDIR(top.st_mode):
            continue
        for folder, _dirs, files in os.walk(entry):
            for name in files:
                try:
                    info = os.stat(os.path.join(folder, name), follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISREG(info.st_mode):
                    found.add((info.st_dev, info.st_ino))
                if len(found) >= MAX_DENIED_FILES:
                    return found
    return found


__all__ = [
    "PathCheck",
    "TouchesPath",
    "TouchesPaths",
    "Verdict",
    "Workspace",
    "default_denied",
    "resolve",
    "with_side_files",
]
