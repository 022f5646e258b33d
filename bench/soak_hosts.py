"""The soak's gateway hosts: each a process of its own (``bench/soak_host.py``) behind a
:class:`~tui_gateway.wire.client.RemoteGateway`, and what the soak watches of its events.

:class:`Watch` keeps, per turn, only what the checks need (the ``message.complete`` outcomes,
the ``compression.complete`` of a ``/compress``) and flags for the waits (first delta, first
tool start or output, first summary token, first child agent), dropped after each step.
:class:`Host` starts its process, can kill it (``SIGKILL``) and start it again on the same
database, and reads its RSS from ``/proc``.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from contract.events import (
    CompressionComplete,
    CompressionProgressed,
    GatewayEvent,
    MessageComplete,
    MessageDelta,
    ToolOutput,
    ToolStart,
)
from contract.mcp_events import McpServerChanged
from contract.steer_events import ChildStarted
from tui_gateway.wire.client import RemoteGateway

HOST_SCRIPT = Path(__file__).resolve().parent / "soak_host.py"
WAIT_S = 60.0


@dataclass(frozen=True, slots=True)
class Seen:
    """A ``message.complete`` as the checks need it (not its text)."""

    exit_reason: str
    closed_ms: float | None


class Watch:
    """What the soak needs of one host's events, in bounded memory (no deltas kept)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self.completes: dict[str, list[Seen]] = {}
        self.compressions: dict[str, list[CompressionComplete]] = {}
        self.mcp_ready = False
        self._flags: dict[str, set[str]] = {
            k: set() for k in ("streaming", "tooling", "summarizing", "child")
        }
        self._compress_turns: set[str] = set()

    def __call__(self, event: GatewayEvent) -> None:
        p = event.payload
        with self._cond:
            if isinstance(p, MessageComplete):
                closed = p.stop.closed_ms if p.stop is not None else None
                self.completes.setdefault(p.turn_id, []).append(Seen(p.exit_reason, closed))
            elif isinstance(p, CompressionComplete):
                self.compressions.setdefault(p.turn_id, []).append(p)
            elif isinstance(p, MessageDelta):
                if p.turn_id in self._flags["streaming"]:
                    return
                self._flags["streaming"].add(p.turn_id)
            elif isinstance(p, ToolOutput | ToolStart):
                self._flags["tooling"].add(p.turn_id)
            elif isinstance(p, CompressionProgressed) and p.tokens_out > 0:
                self._flags["summarizing"].add(p.turn_id)
            elif isinstance(p, ChildStarted):
                self._flags["child"].add(p.parent_turn_id)
            elif isinstance(p, McpServerChanged):
                self.mcp_ready = p.state == "ready"
            else:
                return
            self._cond.notify_all()

    def wait(self, turn_id: str, what: str, timeout: float = WAIT_S) -> bool:
        """Wait for ``what`` (``streaming``, ``tooling``, ``summarizing``, ``child``, ``done``)
        of a turn, or its end; True when ``what`` came."""
        seen = self._flags.get(what, set())
        with self._cond:
            self._cond.wait_for(lambda: turn_id in seen or self.ended(turn_id), timeout)
            return turn_id in seen

    def wait_mcp(self, timeout: float = 120.0) -> bool:
        """Wait until the MCP test server said it is ready."""
        with self._cond:
            return self._cond.wait_for(lambda: self.mcp_ready, timeout)

    def ended(self, turn_id: str) -> bool:
        """Whether the turn ended: its ``message.complete``, or for a ``/compress``
        (:meth:`compressing`) its ``compression.complete``."""
        return turn_id in self.completes or (
            turn_id in self._compress_turns and turn_id in self.compressions
        )

    def compressing(self, turn_id: str) -> None:
        """Say the turn is a ``/compress``: its ``compression.complete`` ends it."""
        with self._cond:
            self._compress_turns.add(turn_id)
            self._cond.notify_all()

    def forget(self, turn_id: str) -> None:
        """Drop the per-turn flags (the outcomes are kept for the checks)."""
        with self._cond:
            for s in self._flags.values():
                s.discard(turn_id)


class Host:
    """One gateway host in a child process, on the database ``db``.

    Args:
        name: a label (``sqlite-tools``, ``pg-a``...).
        db: the SQLite file or PostgreSQL URL.
        base_url: the model server's OpenAI root.
        model: the model name.
        cwd: the tools' workspace.
        log: where the host's stderr goes.
        extra: more flags of ``soak_host.py`` (``--no-tools``, ``--mcp``).
        env: the process's environment (default: this process's).

    Raises:
        GatewayError: the process did not start or say it was ready.
    """

    def __init__(
        self,
        name: str,
        db: str,
        base_url: str,
        model: str,
        cwd: Path,
        log: IO[Any],
        *extra: str,
        env: dict[str, str] | None = None,
    ) -> None:
        self.env = env
        self.name = name
        self.argv = [
            sys.executable,
            str(HOST_SCRIPT),
            *("--db", db, "--base-url", base_url, "--model", model, "--cwd", str(cwd)),
            *extra,
        ]
        self.mcp = "--mcp" in extra
        self.log = log
        self.kills = 0
        self.pids: list[int] = []
        self.watches: list[Watch] = []
        self.gateway: RemoteGateway
        self.watch: Watch
        self.start()

    def start(self) -> None:
        """Start the process (again) and subscribe a new :class:`Watch`."""
        self.gateway = RemoteGateway(
            self.argv, env=self.env, stderr=self.log, ready_timeout_s=120.0
        )
        self.watch = Watch()
        self.watches.append(self.watch)
        self.gateway.subscribe(self.watch)
        self.pids.append(self.gateway.pid)
        if self.mcp:
            self.watch.wait_mcp()

    @property
    def pid(self) -> int:
        """The running process's id."""
        return self.gateway.pid

    def kill(self) -> None:
        """SIGKILL the process, reap it and end the client's threads (its turns end for the
        subscribers as ``failed(GatewayExited)``)."""
        os.kill(self.gateway.pid, signal.SIGKILL)
        self.gateway.wait_exit(30.0)
        self.gateway.shutdown(timeout_s=1.0)
        self.kills += 1

    def rss_kb(self) -> int:
        """The process's resident set (``VmRSS``), KiB; 0 when it cannot be read."""
        try:
            text = Path(f"/proc/{self.gateway.pid}/status").read_text()
        except OSError:
            return 0
        for line in text.splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        return 0

    def completes(self, turn_id: str) -> list[Seen]:
        """Every ``message.complete`` of the turn that any of this host's processes sent."""
        return [s for w in self.watches for s in w.completes.get(turn_id, [])]

    def compressions(self, turn_id: str) -> list[CompressionComplete]:
        """Every ``compression.complete`` of the turn."""
        return [c for w in self.watches for c in w.compressions.get(turn_id, [])]
