"""Params and result of ``workspace.files``: the workspace's files, for ``@`` completion."""

from __future__ import annotations

from dataclasses import dataclass, field


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
