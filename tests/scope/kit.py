"""A tiny stand-in for an agent: it records every stop it is given."""

from __future__ import annotations

import threading

from agent.stops import StopRequest, Surface

USER_STOP = StopRequest.by_user(Surface.CONSOLE_CANCEL, "cancelled")
TIMEOUT_STOP = StopRequest.by_system(Surface.CONSOLE_TIMEOUT, "took longer than 60 s")


class FakeAgent:
    """Implements the scope's ``Interruptible`` protocol; thread-safe."""

    def __init__(self, name: str = "fake") -> None:
        self.name = name
        self._lock = threading.Lock()
        self.stops: list[StopRequest] = []
        self.threads: list[str] = []
        """The name of the thread that delivered each stop."""

    def interrupt(self, stop: StopRequest) -> None:
        with self._lock:
            self.stops.append(stop)
            self.threads.append(threading.current_thread().name)

    @property
    def count(self) -> int:
        with self._lock:
            return len(self.stops)

    def __repr__(self) -> str:
        return f"FakeAgent({self.name!r}, stops={self.count})"
