"""``gateway.shutdown``: a system stop of everything, a bounded wait, then the store is closed.

DESIGN.md, flow 5: the gateway refuses new work, publishes ``gateway.stopping``, has the booking
office stop everything as ``gateway.shutdown`` (queued prompts dropped and saved as not sent,
running turns and console commands hard-stopped), starts ending its MCP servers, waits (bounded)
until every worker has exited, ends the ``shell`` tool's spare keepers, books the turns whose
worker outlived the bound (with the reply they had streamed), drops the live sessions never used
(no prompt: :mod:`tui_gateway.sessions.unused`), and only then closes the store (writing what
waits for the database, bounded, and exporting what it could not write; the store's writes from
the stop on are synced together there; nothing before the stop waits for the store), waits for
the MCP servers to have ended (the two waits overlap), and closes the subscriptions. It runs
once; a second caller waits for the first one's report.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from agent.stamps import stamp
from agent.stops import StopRequest, Surface
from contract.events import GatewayStopping
from contract.results import ShutdownReport
from tui_gateway.console import Console
from tui_gateway.events.event_hub import EventHub
from tui_gateway.servers.mcp_servers import McpServers
from tui_gateway.sessions.persistence import Persistence
from tui_gateway.sessions.session_table import SessionTable
from tui_gateway.sessions.unused import discard_unused
from tui_gateway.stops.booking import BookingOffice
from tui_gateway.turns.turn_runner import TurnRunner


class Shutdown:
    """The gateway's one shutdown.

    Args:
        table: the live sessions (closed first).
        booking: stops everything.
        console: joined after the stop.
        runner: its workers are joined after the stop.
        persistence: closed last but one.
        events: closed last, after the final events were delivered.
        bound_s: the default bound of the wait, in seconds.
        mcp: the MCP servers, ended once every turn was stopped (their close runs while the
            workers are joined).
        close_tools: ends what the tools keep between calls (the ``shell`` tool's spare
            keepers), once the workers are joined.
    """

    def __init__(
        self,
        table: SessionTable,
        booking: BookingOffice,
        console: Console,
        runner: TurnRunner,
        persistence: Persistence,
        events: EventHub,
        *,
        bound_s: float,
        mcp: McpServers | None = None,
        close_tools: Callable[[], object] | None = None,
    ) -> None:
        self._table = table
        self._booking = booking
        self._console = console
        self._runner = runner
        self._persistence = persistence
        self._events = events
        self._bound_s = bound_s
        self._mcp = mcp
        self._close_tools = close_tools
        self._report: ShutdownReport | None = None
        self._done = threading.Event()

    def run(self, timeout_s: float | None = None) -> ShutdownReport:
        """Shut down, or wait for the shutdown another thread runs.

        Args:
            timeout_s: the bound in seconds (default: the configured one).

        Returns:
            what was stopped and whether any worker outlived the bound.
        """
        bound = self._bound_s if timeout_s is None else timeout_s
        started = time.monotonic()
        if not self._table.close():  # another thread shuts down: wait for its report
            self._done.wait(bound + 1.0)
            return self._report or ShutdownReport(0, 0, ["shutdown still running"])
        stamp("shutdown.begin")
        sessions = self._table.all()
        stop = StopRequest.by_system(Surface.GATEWAY_SHUTDOWN, "desk is shutting down")
        # what the shutdown waits for: every worker, a background child agent's included (a
        # session's ``running`` is cleared before its worker saves and exits, too)
        current = threading.current_thread()
        workers = sum(1 for t in self._runner.alive() if t is not current)
        running = max(self._table.running_turns(), workers)
        self._events.publish(None, GatewayStopping(turns=running, timeout_s=bound))
        stopped, dropped = self._booking.stop_all(stop)  # first: nothing here waits for the store
        stamp("shutdown.stopped")
        self._persistence.quitting()  # the writes below are synced once, by the close
        deadline = time.monotonic() + bound
        if self._mcp is not None:
            self._mcp.begin_close()
        left = self._console.shutdown(stop, bound)
        stamp("shutdown.console_joined")
        left += self._runner.join(max(0.0, deadline - time.monotonic()))
        stamp("shutdown.workers_joined")
        if self._close_tools is not None:  # the spare keepers: no turn runs any more
            self._close_tools()
        self._booking.close_stuck(sessions, stop)
        discard_unused(self._persistence, sessions)  # no empty "(new session)" left behind
        self._events.flush_journal()  # a shared store's kept events, while it is open
        unsaved = self._persistence.close()  # while the MCP servers end: nothing of theirs
        stamp("shutdown.store_closed")  # is saved, and the two waits overlap
        if self._mcp is not None:
            left += self._mcp.close(max(0.0, deadline - time.monotonic()))
            stamp("shutdown.mcp_closed")
        self._events.close()
        stamp("shutdown.end")
        self._report = ShutdownReport(
            turns_stopped=stopped,
            prompts_dropped=dropped,
            threads_left=left,
            elapsed_s=time.monotonic() - started,
            unsaved=sorted(str(path) for path in unsaved.values()),
        )
        self._done.set()
        return self._report
