"""The test side of what the test MCP server reports: a Unix socket, and waiting on its events.

:class:`Witness` listens on a socket in a short temporary directory (a Unix socket path is at
most 107 bytes); every server started with ``--witness PATH`` connects and sends one JSON
object a line (see ``tests/mcp/servers/desk_test_server.py``). Tests wait on those events with a
deadline, never a sleep.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

SERVER = Path(__file__).resolve().parent / "servers" / "desk_test_server.py"
"""The test MCP server, run by path."""

Event = dict[str, Any]


def server_command(witness: Witness | None, *flags: str) -> tuple[str, ...]:
    """The command line of the test server: ``python SERVER --witness PATH FLAGS...``."""
    line = [sys.executable, str(SERVER)]
    if witness is not None:
        line += ["--witness", str(witness.path)]
    return (*line, *flags)


class Witness:
    """Collects the test server's reports; thread-safe."""

    def __init__(self) -> None:
        self._dir = tempfile.mkdtemp(prefix="desk-w")
        self.path = Path(self._dir) / "w.sock"
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(str(self.path))
        self._listener.listen(16)
        self.events: list[Event] = []
        self._cond = threading.Condition()
        self._closed = False
        self._threads: list[threading.Thread] = []
        accept = threading.Thread(target=self._accept, name="witness-accept", daemon=True)
        accept.start()
        self._threads.append(accept)

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            reader = threading.Thread(target=self._read, args=(conn,), daemon=True)
            reader.start()
            self._threads.append(reader)

    def _read(self, conn: socket.socket) -> None:
        with conn, conn.makefile("rb") as lines:
            for raw in lines:
                with self._cond:
                    self.events.append(json.loads(raw))
                    self._cond.notify_all()

    def wait_for(self, predicate: Callable[[list[Event]], bool], timeout: float = 20.0) -> bool:
        """Block until ``predicate(events)`` holds or ``timeout`` seconds pass; returns it."""
        with self._cond:
            return self._cond.wait_for(lambda: predicate(self.events), timeout)

    @property
    def mark(self) -> int:
        """How many events came so far (for :meth:`wait_event`'s ``since``)."""
        with self._cond:
            return len(self.events)

    def wait_event(
        self, event: str, timeout: float = 20.0, *, since: int = 0, **match: Any
    ) -> Event:
        """The first event named ``event`` (from index ``since`` on) whose fields include
        ``match``, waited for."""

        def found(events: list[Event]) -> Event | None:
            for item in events[since:]:
                if item["event"] == event and all(item.get(k) == v for k, v in match.items()):
                    return item
            return None

        assert self.wait_for(lambda ev: found(ev) is not None, timeout), (
            f"the server did not report {event} {match} in {timeout} s: {self.events}"
        )
        result = found(self.events)
        assert result is not None
        return result

    def of(self, event: str) -> list[Event]:
        """Every event named ``event`` so far."""
        with self._cond:
            return [item for item in self.events if item["event"] == event]

    def close(self) -> None:
        """Stop listening and remove the socket's directory."""
        self._listener.close()
        shutil.rmtree(self._dir, ignore_errors=True)
        if os.path.exists(self.path):
            os.unlink(self.path)
