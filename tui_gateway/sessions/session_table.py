"""The gateway's live sessions: lookup, which one to evict, and closing for good.

The table holds a bounded number of sessions. Adding one past the bound names the least
recently used one (an idle one first) as the victim; the booking office evicts it
(:meth:`tui_gateway.stops.booking.BookingOffice.evict`: its running turn is hard-stopped as
``session.evicted`` before its slot is released).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from agent.compression.plan import is_summary
from contract.errors import GatewayError
from tui_gateway.sessions.state import Session

CLOSING = "the gateway is shutting down"
"""The refusal of new work once the gateway is closing."""


class SessionTable:
    """Live sessions by id. Thread-safe.

    Args:
        max_sessions: live sessions kept; adding one more names a victim to evict.
    """

    def __init__(self, max_sessions: int) -> None:
        self._max = max_sessions
        self._lock = threading.Lock()
        self._sessions: dict[str, Session] = {}
        self._closing = False

    def add(self, session: Session) -> tuple[Session, Session | None]:
        """Hold ``session`` (or the live one with its id, which is kept).

        Returns:
            the session now held under that id, and the session to evict (None when the
            table is within its bound).

        Raises:
            GatewayError: when the gateway is shutting down.
        """
        with self._lock:
            if self._closing:
                raise GatewayError(CLOSING)
            held = self._sessions.setdefault(session.session_id, session)
            return held, self._victim(keep=held)

    def _victim(self, keep: Session) -> Session | None:
        # Called with the lock held: the least recently used session, idle ones first.
        if len(self._sessions) <= self._max:
            return None
        others = [s for s in self._sessions.values() if s is not keep]
        return min(others, key=lambda s: (s.running is not None, s.last_used))

    @contextmanager
    def open_for_work(self) -> Iterator[None]:
        """Hold the table's lock while new work is handed to a session and its worker started,
        so a shutdown (which closes the table under the same lock) sees that work.

        Raises:
            GatewayError: when the gateway is shutting down.
        """
        with self._lock:
            if self._closing:
                raise GatewayError(CLOSING)
            yield

    def get(self, session_id: str) -> Session:
        """The live session with that id.

        Raises:
            GatewayError: no such live session (code -32602).
        """
        session = self.find(session_id)
        if session is None:
            raise GatewayError(f"no session {session_id!r}", code=-32602)
        return session

    def find(self, session_id: str) -> Session | None:
        """The live session with that id, or None."""
        with self._lock:
            return self._sessions.get(session_id)

    def remove(self, session_id: str) -> None:
        """Forget the session (nothing happens when it is not held)."""
        with self._lock:
            self._sessions.pop(session_id, None)

    def all(self) -> list[Session]:
        """The live sessions now, in the order they were added."""
        with self._lock:
            return list(self._sessions.values())

    def ids(self) -> list[str]:
        """Ids of the live sessions now."""
        with self._lock:
            return list(self._sessions)

    def close(self) -> bool:
        """Refuse new sessions and new work from now on.

        Returns:
            True for the first call, False when the table was closing already.
        """
        with self._lock:
            first = not self._closing
            self._closing = True
            return first

    def running_turns(self) -> int:
        """How many sessions run a turn now."""
        return sum(1 for s in self.all() if s.running is not None)

    def summaries(self) -> list[str]:
        """One line per live session: id, title, model, turns, and whether a turn runs.

        Turns are counted from the session's history (its prompts), so a resumed session counts
        the turns it had before this process too.
        """
        lines = []
        for s in self.all():
            with s.lock:
                state = "running" if s.running is not None else "idle"
                turns = sum(1 for m in s.history if m.role == "user" and not is_summary(m))
            lines.append(
                f"{s.session_id}  {s.title or '(untitled)'}  [{s.model}]  {turns} turns, {state}"
            )
        return lines
