"""What a desk under a bench saved: its turns, read from its SQLite store (``desk --db``)."""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class SavedTurn:
    """One ended turn as the store has it.

    Attributes:
        prompt: the person's text.
        exit_reason: ``completed``, ``interrupted_by_user``...
        stop_issuer: ``user``, ``system`` or None.
    """

    prompt: str
    exit_reason: str
    stop_issuer: str | None


def ended_turns(db: Path) -> list[SavedTurn]:
    """The ended turns (not child agents) in ``db``, oldest first; [] before the file exists."""
    if not db.exists():
        return []
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5.0) as conn:
            rows = conn.execute(
                "SELECT prompt, exit_reason, stop_issuer FROM turns"
                " WHERE exit_reason IS NOT NULL AND parent_turn_id IS NULL"
                " ORDER BY started_at, rowid"
            ).fetchall()
    except sqlite3.Error:  # being created, or locked for a moment
        return []
    return [SavedTurn(str(p), str(r), None if i is None else str(i)) for p, r, i in rows]


def wait_turns(db: Path, count: int, timeout_s: float) -> list[SavedTurn]:
    """Poll ``db`` (every 5 ms) until it has ``count`` ended turns or ``timeout_s`` passes;
    returns what it has then."""
    deadline = time.monotonic() + timeout_s
    while True:
        turns = ended_turns(db)
        if len(turns) >= count or time.monotonic() >= deadline:
            return turns
        time.sleep(0.005)
