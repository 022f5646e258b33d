"""Running console commands: a bounded queue, one thread per running command, real cancels.

Cancelling (DESIGN.md, flow 3): a command still queued is dropped with ``Future.cancel()`` and
never runs; a running one gets ``scope.cancel(stop)``, which hard-stops every agent running
under its scope (however deep inside synchronous code it was created), and the command's
``ctx.check()`` raises at its next step. The command reports ``cancelled`` or ``timeout`` only
when its worker has exited; a worker that has not exited ``exit_bound_s`` after the cancel is
reported as stuck, once. Cancelling an asyncio wrapper of an executor future would not stop the
thread, so nothing here relies on it.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field

from agent.scope import InterruptScope
from agent.stops import StopRequest, Surface
from contract.events import ConsoleComplete, ConsoleOutput, Payload
from tui_gateway.console.commands import (
    CommandContext,
    CommandError,
    CommandStopped,
    ConsoleHost,
    execute,
)

Publish = Callable[[str, Payload], None]
"""Publishes a payload for a session id; never blocks."""


@dataclass(slots=True)
class ConsoleRun:
    """One command line and its lifecycle.

    Attributes:
        command_id: unique id.
        session_id: the session it was typed in.
        line: the command line.
        future: pending while queued, running, then done; ``cancel()`` only wins while queued.
        scope: the fresh scope the command runs under.
        stop: the first stop sent to it, if any.
        reported: True once its ``console.complete`` was published (exactly once).
        thread: its worker thread, once started.
        started_at: ``time.monotonic()`` when its worker started.
        watchdog: after a cancel, the timer that reports the command as stuck if its worker
            has not exited within the bound.
    """

    command_id: str
    session_id: str
    line: str
    future: Future[None] = field(default_factory=Future)
    scope: InterruptScope = field(default_factory=lambda: InterruptScope("console"))
    stop: StopRequest | None = None
    reported: bool = False
    thread: threading.Thread | None = None
    started_at: float | None = None
    watchdog: threading.Timer | None = None


class Console:
    """Runs console command lines for a gateway.

    Args:
        host: what commands may do to the gateway.
        publish: sends a payload for a session id.
        max_workers: commands running at once; further ones wait in order.
        timeout_s: a command running longer is stopped as ``console.timeout`` (a system stop).
        exit_bound_s: how long after a cancel the worker may take to exit before it is reported
            as stuck.
    """

    def __init__(
        self,
        host: ConsoleHost,
        publish: Publish,
        *,
        max_workers: int = 2,
        timeout_s: float = 60.0,
        exit_bound_s: float = 10.0,
    ) -> None:
        self._host = host
        self._publish = publish
        self._max_workers = max_workers
        self.timeout_s = timeout_s
        self.exit_bound_s = exit_bound_s
        self._lock = threading.Lock()
        self._queue: deque[ConsoleRun] = deque()
        self._runs: dict[str, ConsoleRun] = {}
        self._running = 0
        self._closed = False

    def run(self, session_id: str, line: str) -> ConsoleRun:
        """``console.run``: queue ``line``; it starts when a worker is free.

        Raises:
            CommandError: when the console is shut down or the line is empty.
        """
        if not line.strip():
            raise CommandError("the command line is empty")
        run = ConsoleRun(command_id=uuid.uuid4().hex[:12], session_id=session_id, line=line)
        with self._lock:
            if self._closed:
                raise CommandError("the console is shut down")
            self._runs[run.command_id] = run
            self._queue.append(run)
            self._start_ready()
        return run

    def get(self, command_id: str) -> ConsoleRun | None:
        """The run with that id, if any."""
        with self._lock:
            return self._runs.get(command_id)

    def cancel(self, command_id: str, stop: StopRequest) -> bool:
        """``console.cancel``: drop a queued command or stop a running one.

        Args:
            command_id: the command.
            stop: who cancels: the person (``console.cancel``), the timeout (``console.timeout``),
                a frontend that went away, or the shutdown.

        Returns:
            False when the command had already finished.
        """
        with self._lock:
            run = self._runs.get(command_id)
            if run is None or run.future.done():
                return False
            if run.stop is None:
                run.stop = stop
            if run.future.cancel():  # still queued: it will never run
                self._queue.remove(run)
                dropped = True
            else:
                dropped = False
        if dropped:
            self._report(run, "cancelled", f"{stop.describe()} before it started")
            return True
        run.scope.cancel(stop)
        watchdog = threading.Timer(self.exit_bound_s, self._report_stuck, args=(run,))
        watchdog.name = f"desk-console-watch-{command_id}"
        watchdog.daemon = True
        with self._lock:
            if run.watchdog is not None or run.future.done():
                return True  # already watched, or it exited meanwhile
            run.watchdog = watchdog
            watchdog.start()  # under the lock: whoever reads run.watchdog can join it
        run.future.add_done_callback(lambda _f: watchdog.cancel())
        return True

    def cancel_all(self, stop: StopRequest) -> int:
        """Cancel every queued and running command with ``stop``; returns how many."""
        with self._lock:
            ids = [r.command_id for r in self._runs.values() if not r.future.done()]
        return sum(self.cancel(command_id, stop) for command_id in ids)

    def shutdown(self, stop: StopRequest, timeout_s: float) -> list[str]:
        """Refuse new commands, cancel all with ``stop``, wait for their workers (bounded).

        Returns:
            names of worker threads still alive at the deadline.
        """
        with self._lock:
            self._closed = True
        self.cancel_all(stop)
        deadline = time.monotonic() + timeout_s
        with self._lock:
            threads: list[threading.Thread] = [
                t for r in self._runs.values() for t in (r.thread, r.watchdog) if t is not None
            ]
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        return [t.name for t in threads if t.is_alive()]

    # -- workers -------------------------------------------------------------------------------

    def _start_ready(self) -> None:
        # Called with the lock held.
        while self._queue and self._running < self._max_workers:
            run = self._queue.popleft()
            if not run.future.set_running_or_notify_cancel():
                continue  # cancelled while queued: never runs
            self._running += 1
            run.started_at = time.monotonic()
            run.thread = threading.Thread(
                target=self._work, args=(run,), name=f"desk-console-{run.command_id}", daemon=True
            )
            run.thread.start()

    def _work(self, run: ConsoleRun) -> None:
        timer = threading.Timer(
            self.timeout_s,
            self.cancel,
            args=(
                run.command_id,
                StopRequest.by_system(
                    Surface.CONSOLE_TIMEOUT, f"the command took longer than {self.timeout_s:g} s"
                ),
            ),
        )
        timer.name = f"desk-console-timeout-{run.command_id}"
        timer.daemon = True
        timer.start()
        status, message, focus = "ok", "", None

        def write(text: str) -> None:
            self._publish(run.session_id, ConsoleOutput(command_id=run.command_id, text=text))

        try:
            with run.scope:
                ctx = CommandContext(
                    session_id=run.session_id, scope=run.scope, write=write, host=self._host
                )
                focus = execute(run.line, ctx)
        except CommandStopped:
            pass
        except CommandError as exc:
            status, message = "error", exc.message
        except Exception as exc:  # a command's bug must still end with one clear line
            status, message = "error", f"internal error: {type(exc).__name__}: {exc}"
        finally:
            timer.cancel()
        stop = run.scope.stop
        if stop is not None:
            status = "timeout" if stop.surface is Surface.CONSOLE_TIMEOUT else "cancelled"
            message = stop.describe()
        with self._lock:
            self._running -= 1
            self._start_ready()
        self._report(run, status, message, focus)
        run.future.set_result(None)  # cancels the stuck watchdog, if a cancel armed one
        timer.join(1.0)
        with self._lock:
            watchdog = run.watchdog
        if watchdog is not None:
            watchdog.join(1.0)

    def _report_stuck(self, run: ConsoleRun) -> None:
        stop = run.stop
        who = stop.describe() if stop is not None else "cancelled"
        message = f"{who}, but the command did not exit within {self.exit_bound_s:g} s"
        self._report(run, "cancelled", message)

    def _report(self, run: ConsoleRun, status: str, message: str, focus: str | None = None) -> None:
        with self._lock:
            if run.reported:
                return
            run.reported = True
        elapsed = time.monotonic() - run.started_at if run.started_at is not None else 0.0
        payload = ConsoleComplete(
            command_id=run.command_id,
            line=run.line,
            status=status,
            message=message,
            focus_session=focus,
            elapsed_s=elapsed,
        )
        self._publish(run.session_id, payload)
