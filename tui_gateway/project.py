"""A new session's system message, and the project instructions files a session carries."""

from __future__ import annotations

from pathlib import Path

from agent.context.instructions import (
    ProjectInstructions,
    files_named,
    find_instructions,
    system_text,
)
from agent.provider.types import ChatMessage
from tui_gateway.state import Session
from tui_gateway.types import GatewayConfig


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
