"""``workspace.files`` (the workspace's files, for ``@`` completion): its params, result and
declaration."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from contract.methods.declare import Method


@dataclass(frozen=True, slots=True)
class WorkspaceFilesParams:
    """Params of ``workspace.files``.

    Attributes:
        query: what is typed after ``@`` ("" lists the shortest paths first).
        limit: most paths returned (1 to 500).
    """

    query: str = ""
    limit: int = 50


@dataclass(frozen=True, slots=True)
class WorkspaceFilesResult:
    """Result of ``workspace.files``.

    Attributes:
        files: paths relative to the workspace, best match first.
    """

    files: list[str] = field(default_factory=list)


# -- the methods: name, params, result, what it does, and the call into the gateway --

WORKSPACE_FILES = Method(
    "workspace.files",
    WorkspaceFilesParams,
    WorkspaceFilesResult,
    "The workspace's files whose paths hold `query`'s characters in order, best first (for "
    "completing an `@` mention): git's list in a git repository (`.gitignore` respected), "
    "else a walk that skips hidden directories. A prompt's `@path` mentions are attached "
    "by `prompt.submit`.",
    lambda g, p: WorkspaceFilesResult(files=g.workspace_files(p.query, p.limit)),
    blocking=True,
)

METHODS: tuple[Method[Any, Any], ...] = (WORKSPACE_FILES,)
"""This group's methods, in the order the reference lists them."""
