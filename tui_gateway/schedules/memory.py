"""Firings kept in memory: the :class:`~agent.store.protocol.Firings` of a gateway without a
database (one process, so it wins every firing it claims once)."""

from __future__ import annotations

import threading
import time
from dataclasses import replace

from agent.store import FiringRow


class MemoryFirings:
    """:class:`~agent.store.protocol.Firings` in memory (thread-safe).

    Args:
        owner: the owner named on the rows.
    """

    def __init__(self, owner: str = "memory") -> None:
        self._owner = owner
        self._lock = threading.Lock()
        self._rows: dict[tuple[str, float], FiringRow] = {}
        self._sessions: dict[str, str] = {}

    def claim_firing(self, schedule: str, due_at: float) -> bool:
        """Add the firing unless it is there (True: added)."""
        with self._lock:
            if (schedule, due_at) in self._rows:
                return False
            row = FiringRow(schedule, due_at, self._owner, time.time(), None, None, None, None)
            self._rows[(schedule, due_at)] = row
            return True

    def start_firing(self, schedule: str, due_at: float, session_id: str, turn_id: str) -> bool:
        """Note the firing's session and turn (False: no such firing)."""
        with self._lock:
            row = self._rows.get((schedule, due_at))
            if row is None:
                return False
            self._rows[(schedule, due_at)] = replace(row, session_id=session_id, turn_id=turn_id)
            return True

    def end_firing(self, schedule: str, due_at: float, outcome: str) -> bool:
        """Note the firing's outcome once (False: noted already, or no such firing)."""
        with self._lock:
            row = self._rows.get((schedule, due_at))
            if row is None or row.outcome is not None:
                return False
            self._rows[(schedule, due_at)] = replace(row, outcome=outcome, ended_at=time.time())
            return True

    def last_firings(self, schedule: str, limit: int = 1) -> list[FiringRow]:
        """The schedule's firings, newest due time first."""
        with self._lock:
            rows = [r for (name, _), r in self._rows.items() if name == schedule]
        return sorted(rows, key=lambda r: r.due_at, reverse=True)[:limit]

    def bind_session(self, schedule: str, session_id: str) -> str:
        """The schedule's session (``session_id`` unless it had one)."""
        with self._lock:
            return self._sessions.setdefault(schedule, session_id)

    def schedule_session(self, schedule: str) -> str | None:
        """The schedule's session, or None."""
        with self._lock:
            return self._sessions.get(schedule)
