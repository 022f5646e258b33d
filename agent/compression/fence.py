"""The commit fence: decides, exactly once, whether a cancel or the commit wins.

States: ``open`` (the compression runs; a cancel wins and rolls back), ``admitted`` (the commit
is under way; a cancel waits for it and then applies to what follows), then one of the final
``committed``, ``cancelled`` or ``refused`` (the store refused the admitted commit). All
transitions happen under one lock, so a cancel racing the commit has exactly one outcome.
"""

from __future__ import annotations

import threading
from enum import StrEnum

from agent.stops import StopRequest


class FenceState(StrEnum):
    """Where the fence is: ``open``, ``admitted``, or final (the other three)."""

    OPEN = "open"
    ADMITTED = "admitted"
    COMMITTED = "committed"
    CANCELLED = "cancelled"
    REFUSED = "refused"


class CommitFence:
    """One compression attempt's fence. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state: FenceState = FenceState.OPEN
        self._stop: StopRequest | None = None
        self._settled = threading.Event()

    @property
    def state(self) -> FenceState:
        """``open``, ``admitted``, ``committed``, ``cancelled`` or ``refused``."""
        with self._lock:
            return self._state

    @property
    def stop(self) -> StopRequest | None:
        """The first hard stop that reached the fence, if any."""
        with self._lock:
            return self._stop

    def cancel(self, stop: StopRequest) -> bool:
        """A hard stop reaches the fence.

        Returns:
            True when the cancel wins (the attempt must roll back); False when the commit was
            already admitted (the caller waits with :meth:`wait_settled`) or is final.
        """
        with self._lock:
            if self._stop is None:
                self._stop = stop
            if self._state == FenceState.OPEN:
                self._state = FenceState.CANCELLED
                self._settled.set()
                return True
            return False

    def admit(self) -> bool:
        """Ask to commit. Returns False when a cancel came first (roll back instead)."""
        with self._lock:
            if self._state != FenceState.OPEN:
                return False
            self._state = FenceState.ADMITTED
            return True

    def settle(self, committed: bool) -> None:
        """The admitted commit finished (``committed``) or was refused by the store."""
        with self._lock:
            if self._state == FenceState.ADMITTED:
                self._state = FenceState.COMMITTED if committed else FenceState.REFUSED
            self._settled.set()

    def wait_settled(self, timeout_s: float | None = None) -> bool:
        """Block until the attempt is final; True when it is."""
        return self._settled.wait(timeout_s)
