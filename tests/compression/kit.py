"""Helpers for compression tests: a saved session with a long transcript, and state snapshots."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent.provider.types import ChatMessage
from agent.store import SqliteStore

WINDOW = 4000
"""A small context window, so a few long exchanges are worth compressing (tokens)."""


def long_transcript(exchanges: int = 8) -> list[ChatMessage]:
    """A system prompt and ``exchanges`` long question/answer pairs (about 750 tokens each)."""
    out = [ChatMessage("system", "You are a careful assistant.")]
    for i in range(exchanges):
        out.append(ChatMessage("user", f"question {i}: " + f"detail {i} " * 150))
        out.append(ChatMessage("assistant", f"answer {i}: " + f"finding {i} " * 150))
    return out


def saved_session(store: SqliteStore, messages: list[ChatMessage]) -> str:
    """A session in ``store`` holding ``messages``; returns its id."""
    return store.sessions.create_session(title="long", model="demo", messages=messages).id


@dataclass(frozen=True)
class Snapshot:
    """What a cancelled compression must leave exactly as it was."""

    messages: list[tuple[Any, ...]]
    cooldown: Any
    lease: Any


def snapshot(store: SqliteStore, session_id: str) -> Snapshot:
    """The transcript rows (archived ones included), the cooldown row and the lease row."""
    rows = [
        (m.id, m.position, m.order_key, m.role, m.content, m.active, m.archived_by)
        for m in store.transcript.all_messages(session_id)
    ]
    return Snapshot(
        rows, store.compressions.get_cooldown(session_id), store.leases.get_lease(session_id)
    )
