"""A new session's system message, the project instructions files a session carries, and the
workspace's files for ``@`` mentions."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from agent.context.instructions import (
    ProjectInstructions,
    files_named,
    find_instructions,
    system_text,
)
from agent.context.mentions import (
    MentionRefused,
    find_attachments,
    fuzzy_rank,
    with_attachments,
    workspace_files,
)
from agent.provider.types import ChatMessage
from agent.tools.workspace import Workspace
from contract.errors import GatewayError
from tui_gateway.engine_setup import GatewayConfig
from tui_gateway.sessions.state import Session

LISTING_TTL_S = 2.0
"""How long a listing of the workspace's files is reused for completion, in seconds."""


def first_messages(config: GatewayConfig, cwd: Path) -> list[ChatMessage]:
    """A new session's first messages: its system message (the configured prompt, then the
    workspace's project instructions, ``AGENTS.md``, read afresh for each new session), or
    none when both are empty."""
    found = find_instructions(cwd) if config.project_instructions else ProjectInstructions()
    text = system_text(config.system_prompt, found)
    return [ChatMessage(role="system", content=text)] if text else []


def instruction_files(session: Session) -> list[str]:
    """The project instructions files the session's system message carries, relative to the
    workspace, outermost first; [] for none (a resumed session: those read when it began)."""
    with session.lock:
        first = session.history[0] if session.history else None
    if first is None or first.role != "system":
        return []
    return files_named(first.content)


class WorkspaceFiles:
    """The workspace's files: listed for ``@`` completion, attached to a prompt that mentions
    them. Thread-safe.

    Args:
        workspace: the boundary whose deny list holds for attachments.
        cwd: the workspace directory.
    """

    def __init__(self, workspace: Workspace, cwd: Path) -> None:
        self._workspace = workspace
        self._cwd = cwd
        self._lock = threading.Lock()
        self._listed: tuple[float, list[str]] | None = None

    def matching(self, query: str, limit: int) -> list[str]:
        """The files whose paths hold ``query``'s characters in order, best first."""
        now = time.monotonic()
        with self._lock:
            listed = self._listed
        if listed is None or now - listed[0] > LISTING_TTL_S:
            listed = (now, workspace_files(self._cwd))
            with self._lock:
                self._listed = listed
        return fuzzy_rank(query, listed[1], limit)

    def attach(self, text: str) -> str:
        """``text`` with the files it mentions attached.

        Raises:
            GatewayError: a mentioned file is denied, unreadable or not text (one line).
        """
        try:
            attachments = find_attachments(text, self._workspace, self._cwd)
        except MentionRefused as exc:
            raise GatewayError(exc.message, code=-32602) from None
        return with_attachments(text, attachments)
