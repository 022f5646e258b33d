"""Quitting as a system stop: the gateway's shutdown on a plain thread, and quit signals.

``gateway.shutdown()`` blocks until every turn's worker has exited (bounded, 10 s by default),
so it never runs on the UI thread when a person quits; and it never runs on a Textual worker,
because Textual would wait for that worker while it exits. :class:`ShutdownRunner` owns the
thread; SIGTERM and SIGHUP join the same path through :func:`install_quit_signals`.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

from agent.stops import Surface
from contract.ports import DeskGateway
from contract.results import ShutdownReport

Leave = Callable[[str, ShutdownReport], None]
"""Ends the process once a quit saved everything: given the resume hint and the shutdown's
report, it prints what the terminal is to say and exits (it does not return)."""

QUIT_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGTERM, signal.SIGHUP)
"""Signals handled as a system quit (the same path as Ctrl+Q)."""


class ShutdownRunner:
    """Runs ``gateway.shutdown()`` once, on a thread of its own, and reports when it is done.

    Args:
        gateway: the gateway to shut down.
    """

    def __init__(self, gateway: DeskGateway) -> None:
        self._gateway = gateway
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()  # start() runs on the UI thread or the input thread
        self._done = threading.Event()
        self.report: ShutdownReport | None = None
        """The gateway's report, once the shutdown returned."""
        self.shutting_down = False
        """True once the gateway's shutdown begins (it refuses prompts from then on)."""

    @property
    def started(self) -> bool:
        """True once :meth:`start` or :meth:`run_here` ran."""
        return self._thread is not None or self._done.is_set()

    def start(
        self,
        then: Callable[[], None],
        gone: Surface | None = None,
        before: Callable[[], None] | None = None,
    ) -> bool:
        """Shut the gateway down on a thread named ``desk-quit``, then call ``then`` there.

        Args:
            then: called on that thread after the shutdown returned (or raised).
            gone: when the frontend went away (a closed browser tab: ``web.disconnect``), the
                system surface its running turns are stopped from first
                (``gateway.frontend_gone``); the shutdown then waits for their workers.
            before: called on that thread first (the keys typed before the quit are waited
                for: :mod:`desk.typing_drain`); prompts are taken until it returns.

        Returns:
            False when a shutdown had already begun (nothing new is started). Thread-safe.
        """

        def run() -> None:
            try:
                if before is not None:
                    before()
                self.shutting_down = True
                if gone is not None:
                    self._frontend_gone(gone)
                self.report = self._gateway.shutdown()
            finally:
                self._done.set()
                then()

        with self._lock:
            if self.started:
                return False
            self._thread = threading.Thread(target=run, name="desk-quit", daemon=True)
        self._thread.start()
        return True

    def _frontend_gone(self, surface: Surface) -> None:
        try:
            self._gateway.frontend_gone(surface)
        except Exception as exc:  # the shutdown below still stops everything, as the system
            print(f"desk: could not book {surface.value}: {exc}", file=sys.stderr, flush=True)

    def run_here(self) -> ShutdownReport:
        """Shut down on the calling thread (the backstop when no quit had begun)."""
        self.shutting_down = True
        self.report = self._gateway.shutdown()
        self._done.set()
        return self.report

    def wait(self, timeout_s: float) -> bool:
        """Wait until the shutdown returned; True if it did within ``timeout_s`` seconds."""
        return self._done.wait(timeout_s)

    def join(self, timeout_s: float) -> bool:
        """Wait until the shutdown's thread ended, ``then`` included (which may end the
        process: then this never returns); True if it ended within ``timeout_s`` seconds."""
        thread = self._thread
        if thread is None:
            return self._done.is_set()
        thread.join(timeout_s)
        return not thread.is_alive()


def install_quit_signals(callback: Callable[[signal.Signals], None]) -> list[signal.Signals]:
    """Handle :data:`QUIT_SIGNALS` on the running asyncio loop by calling ``callback(sig)``.

    Call from a coroutine or callback of the loop (e.g. ``on_mount``).

    Returns:
        the signals now handled (none when not on the main thread).
    """
    loop = asyncio.get_running_loop()
    installed: list[signal.Signals] = []
    for sig in QUIT_SIGNALS:
        try:
            loop.add_signal_handler(sig, callback, sig)
        except (ValueError, RuntimeError, NotImplementedError):
            continue  # not the main thread, or no signal support here
        installed.append(sig)
    return installed


@contextlib.contextmanager
def quit_signals_at_once(callback: Callable[[signal.Signals], None]) -> Iterator[None]:
    """While the UI thread blocks (a program it runs has the terminal), call ``callback(sig)``
    for :data:`QUIT_SIGNALS` at once, in a plain signal handler: the asyncio loop's own
    handler waits for the loop, which waits for the program (a SIGTERM while the editor was
    open left the turn streaming until the editor exited). The loop's handler still runs once
    the loop is back (the signal is on its wake-up pipe too). On other threads: nothing."""
    previous: dict[signal.Signals, Any] = {}

    def handler(number: int, _frame: object) -> None:
        callback(signal.Signals(number))

    with contextlib.suppress(ValueError):  # not the main thread: no handler can be set here
        for sig in QUIT_SIGNALS:
            previous[sig] = signal.signal(sig, handler)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def remove_quit_signals(signals: list[signal.Signals]) -> None:
    """Undo :func:`install_quit_signals` (the default action comes back)."""
    with contextlib.suppress(Exception):  # the loop may already be closing
        loop = asyncio.get_running_loop()
        for sig in signals:
            loop.remove_signal_handler(sig)


def shutdown_note(report: ShutdownReport | None, bound_s: float) -> str:
    """What to tell the person when the shutdown's bound expired, or "" when all ended in time.

    Args:
        report: the gateway's shutdown report (None: no report, nothing to say).
        bound_s: the bound the gateway waited, in seconds.

    Returns:
        e.g. ``"gave up waiting after 10 s: 1 worker still running (desk-turn-ab12); exiting
        anyway"``.
    """
    if report is None or not report.threads_left:
        return ""
    left = report.threads_left
    noun = "worker" if len(left) == 1 else "workers"
    names = ", ".join(left[:3]) + (", …" if len(left) > 3 else "")
    return (
        f"gave up waiting after {bound_s:g} s: {len(left)} {noun} still running ({names}); "
        "exiting anyway"
    )


def leave_at_once(
    leave: Leave | None,
    report: ShutdownReport | None,
    driver: object,
    resume_hint: Callable[[], str],
) -> bool:
    """On the quit's thread, once the gateway's shutdown returned: when every worker ended (all
    is saved, nothing runs) and the terminal is desk's own (``driver`` has ``leave_terminal``),
    give the terminal back and call ``leave`` with the resume hint and the report, now. The UI
    thread may be a second or more behind a fast stream on a busy machine; exiting through it
    (the last events drawn, every widget unmounted) made Ctrl+Q take 1.9 s (p50, load 22-28).

    Returns:
        True when it left; False (nothing done) otherwise.
    """
    leave_terminal = getattr(driver, "leave_terminal", None)
    if leave is None or report is None or report.threads_left or leave_terminal is None:
        return False
    hint = resume_hint()
    try:
        leave_terminal()
    finally:  # whatever state the terminal was in, the process ends: nothing is left to do
        leave(hint, report)
    return True
