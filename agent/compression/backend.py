"""Where a compression keeps its lease, attempt and cooldown: the store, or memory.

With a store the lease is a holder-qualified row with an expiry (exclusive across processes),
the commit is one transaction that archives the middle and inserts the summary, and the
cooldown survives restarts. Without one, the same rules hold within this process.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from agent.provider.types import ChatMessage
from agent.store import Cooldown, SessionStore


@dataclass(frozen=True, slots=True)
class Commit:
    """What a commit writes: replace ``history[start:end]`` with ``summary``.

    Attributes:
        start: first index of the middle in the active transcript.
        end: end of the middle (exclusive).
        summary: the summary message.
        tokens_in: estimated tokens of the middle.
        tokens_out: estimated tokens of the summary.
        history_len: length of the active transcript the plan was made on.
    """

    start: int
    end: int
    summary: ChatMessage
    tokens_in: int
    tokens_out: int
    history_len: int


class CompressionBackend(Protocol):
    """Leases, attempts and cooldowns of compressions."""

    def acquire(self, session_id: str, holder: str, ttl_s: float) -> bool:
        """Take the session's lease; False when another holder has an unexpired one."""
        ...

    def renew(self, session_id: str, holder: str, ttl_s: float) -> bool:
        """Extend the lease; False when it was lost."""
        ...

    def begin(self, session_id: str, holder: str) -> int:
        """Record a new attempt; returns its id."""
        ...

    def phase(self, attempt: int, phase: str) -> None:
        """Record the phase the attempt reached (``prepare``, ``summarize``, ``commit``)."""
        ...

    def commit(self, session_id: str, attempt: int, holder: str, commit: Commit) -> bool:
        """Write the commit and release the lease in one transaction; False when refused."""
        ...

    def abandon(
        self,
        session_id: str,
        attempt: int,
        holder: str,
        outcome: str,
        error: str | None,
        cooldown: Cooldown | None,
    ) -> None:
        """End an attempt without committing and release its lease, once; ``cooldown`` is
        written only for a failure (None leaves the cooldown as it was)."""
        ...

    def cooldown(self, session_id: str) -> Cooldown:
        """The session's cooldown now."""
        ...


class MemoryBackend:
    """Leases and cooldowns in this process only (no store).

    Args:
        clock: unix seconds now (injectable for tests).
    """

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._lock = threading.Lock()
        self._leases: dict[str, tuple[str, float]] = {}
        self._cooldowns: dict[str, Cooldown] = {}
        self._attempts = 0
        self._clock = clock

    def acquire(self, session_id: str, holder: str, ttl_s: float) -> bool:
        now = self._clock()
        with self._lock:
            held = self._leases.get(session_id)
            if held is not None and held[0] != holder and held[1] > now:
                return False
            self._leases[session_id] = (holder, now + ttl_s)
            return True

    def renew(self, session_id: str, holder: str, ttl_s: float) -> bool:
        now = self._clock()
        with self._lock:
            held = self._leases.get(session_id)
            if held is None or held[0] != holder or held[1] <= now:
                return False
            self._leases[session_id] = (holder, now + ttl_s)
            return True

    def _release(self, session_id: str, holder: str) -> bool:
        held = self._leases.get(session_id)
        if held is None or held[0] != holder:
            return False
        del self._leases[session_id]
        return True

    def begin(self, session_id: str, holder: str) -> int:
        with self._lock:
            self._attempts += 1
            return self._attempts

    def phase(self, attempt: int, phase: str) -> None:
        return None  # nothing outlives this process: there is no row to keep up to date

    def commit(self, session_id: str, attempt: int, holder: str, commit: Commit) -> bool:
        now = self._clock()
        with self._lock:
            held = self._leases.get(session_id)
            if held is None or held[0] != holder or held[1] <= now:
                return False
            self._release(session_id, holder)
            self._cooldowns.pop(session_id, None)
            return True

    def abandon(
        self,
        session_id: str,
        attempt: int,
        holder: str,
        outcome: str,
        error: str | None,
        cooldown: Cooldown | None,
    ) -> None:
        with self._lock:
            self._release(session_id, holder)
            if cooldown is not None:
                self._cooldowns[session_id] = cooldown

    def cooldown(self, session_id: str) -> Cooldown:
        with self._lock:
            return self._cooldowns.get(session_id, Cooldown(until=None, step=0))


class StoreBackend:
    """Leases, attempts and cooldowns in the session store.

    Raises:
        agent.store.StoreError: from every method, when the store fails.
    """

    def __init__(self, store: SessionStore) -> None:
        self.store = store

    def acquire(self, session_id: str, holder: str, ttl_s: float) -> bool:
        return self.store.leases.acquire_lease(session_id, holder, ttl_s)

    def renew(self, session_id: str, holder: str, ttl_s: float) -> bool:
        return self.store.leases.renew_lease(session_id, holder, ttl_s)

    def begin(self, session_id: str, holder: str) -> int:
        return self.store.compressions.begin_compression(session_id, holder).id

    def phase(self, attempt: int, phase: str) -> None:
        self.store.compressions.set_compression_phase(attempt, phase)

    def commit(self, session_id: str, attempt: int, holder: str, commit: Commit) -> bool:
        ids = self.store.transcript.active_message_ids(session_id)
        if len(ids) < commit.history_len:
            return False  # the saved transcript is not the one the plan was made on
        # It may have grown at its end meanwhile (a turn that compresses again after its first
        # request did not fit has saved its prompt): what is replaced is still the same.
        archive = ids[commit.start : commit.end]
        row = self.store.compressions.commit_compression(
            attempt,
            holder=holder,
            archive_ids=archive,
            summary=commit.summary,
            tokens_in=commit.tokens_in,
            tokens_out=commit.tokens_out,
            release=True,
        )
        return row is not None

    def abandon(
        self,
        session_id: str,
        attempt: int,
        holder: str,
        outcome: str,
        error: str | None,
        cooldown: Cooldown | None,
    ) -> None:
        self.store.compressions.finish_compression(
            attempt, outcome, error=error, cooldown=cooldown, release=True
        )

    def cooldown(self, session_id: str) -> Cooldown:
        found = self.store.compressions.get_cooldown(session_id)
        return found if found is not None else Cooldown(until=None, step=0)
