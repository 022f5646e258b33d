"""A session database with known content, built with the store API (for resume tests)."""

from __future__ import annotations

from pathlib import Path

from agent.provider.types import ChatMessage, ToolCall
from agent.store import NewMessage, SqliteStore

SAVED_AT = 1_750_000_000.0
"""Unix seconds the older session was saved at (the newer one an hour later)."""

OLDER_ID = "a0a0a0a0a0a0"
NEWER_ID = "b1b1b1b1b1b1"


def build_store(path: Path) -> None:
    """Two sessions: "Plan the release" (older) and "Fix the flaky test" (newer).

    The newer one holds a tool call and its result, and a reply cut short by a stop.
    """
    call = ToolCall(id="call_1", name="shell", arguments='{"command": "pytest -x"}')
    with SqliteStore(path, clock=lambda: SAVED_AT) as store:
        store.sessions.create_session(
            OLDER_ID,
            title="Plan the release",
            model="demo",
            created_at=SAVED_AT,
            messages=[
                ChatMessage("user", "What is left before the release?"),
                ChatMessage("assistant", "Two things: the **changelog** and the tag."),
            ],
        )
    with SqliteStore(path, clock=lambda: SAVED_AT + 3600) as store:
        store.sessions.create_session(
            NEWER_ID,
            title="Fix the flaky test",
            model="demo",
            created_at=SAVED_AT + 3600,
            messages=[
                ChatMessage("user", "Why does test_stop fail sometimes?"),
                ChatMessage("assistant", "", tool_calls=(call,)),
                ChatMessage("tool", "1 failed, 41 passed\nFAILED test_stop", tool_call_id="call_1"),
                ChatMessage("assistant", "It waits with a **sleep**; wait on an event instead."),
                ChatMessage("user", "Show me the fix"),
                NewMessage(ChatMessage("assistant", "Here is the fix: replace the"), partial=True),
            ],
        )


def build_long_store(path: Path, messages: int) -> None:
    """One session ("long") of ``messages`` alternating user and assistant messages."""
    items = []
    for n in range(messages):
        role = "user" if n % 2 == 0 else "assistant"
        items.append(ChatMessage(role, f"message {n}"))
    with SqliteStore(path, clock=lambda: SAVED_AT) as store:
        store.sessions.create_session("long", title="long", model="demo", messages=items)
