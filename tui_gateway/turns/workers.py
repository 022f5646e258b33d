"""The gateway's own executor: one named thread per turn, bounded, joinable.

A pool that keeps idle threads would make "no thread of the turn remains" impossible to check;
here each turn's thread ends with the turn, and :meth:`TurnWorkers.join_all` waits for all of
them against a deadline.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class TurnWorkers:
    """Starts and tracks worker threads.

    Args:
        prefix: thread name prefix (threads are named ``<prefix>-<key>``).
    """

    def __init__(self, prefix: str = "desk-turn") -> None:
        self._prefix = prefix
        self._lock = threading.Lock()
        self._threads: set[threading.Thread] = set()

    def start(self, key: str, target: Callable[[], None]) -> threading.Thread:
        """Run ``target`` on a new daemon thread named after ``key``; returns the thread."""

        def run() -> None:
            try:
                target()
            finally:
                with self._lock:
                    self._threads.discard(threading.current_thread())

        thread = threading.Thread(target=run, name=f"{self._prefix}-{key}", daemon=True)
        with self._lock:
            self._threads.add(thread)
        thread.start()
        return thread

    def alive(self) -> list[threading.Thread]:
        """The worker threads still running."""
        with self._lock:
            return [t for t in self._threads if t.is_alive()]

    def join_all(self, timeout_s: float) -> list[str]:
        """Wait until every worker has exited or ``timeout_s`` seconds passed.

        Workers started while waiting (a queued turn's successor) are waited for too.

        Returns:
            names of the threads still alive at the deadline (empty when all exited).
        """
        deadline = time.monotonic() + timeout_s
        current = threading.current_thread()
        while True:
            pending = [t for t in self.alive() if t is not current]
            remaining = deadline - time.monotonic()
            if not pending or remaining <= 0:
                return [t.name for t in pending]
            pending[0].join(remaining)
