"""``desk run`` stopped by a signal before its turn existed.

Starting a run takes a while on a small machine (imports, the demo model, the gateway and its
store). A Ctrl+C (SIGINT) meanwhile ends the run at once, as the person's stop, with what a
stopped run says: one line on stderr, exit status 130 and, with ``--json``, exactly one
``turn.completed`` line on stdout (no ``session.started``: no session existed, so its
``session_id`` is ``""``). SIGTERM and SIGHUP end it the same way, as the system's stop
(``interrupted_by_system(gateway.shutdown)``, exit status 143): :func:`arm` makes them raise
:class:`SystemSignal` in the main thread, as Python makes SIGINT raise ``KeyboardInterrupt``,
until the run takes them over (:func:`disarm`).
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType
from typing import TextIO

EXIT_USER_STOP = 130
"""The exit status of a run the person stopped (as :data:`~tui_gateway.wire.headless`'s)."""

EXIT_SYSTEM_STOP = 143
"""The exit status of a run the system stopped (SIGTERM, SIGHUP)."""

REASON = "stopped with Ctrl+C before the run started"
"""The stop's reason, in the ``turn.completed`` line and on stderr."""

SYSTEM_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGTERM, signal.SIGHUP)
"""The signals that stop a run as the system."""


class SystemSignal(KeyboardInterrupt):
    """SIGTERM or SIGHUP received while the run starts (raised in the main thread).

    A ``KeyboardInterrupt``, so that whatever unwinds a Ctrl+C during the start unwinds this
    too, and no ``except Exception`` swallows it.

    Attributes:
        signum: the signal's number.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


_armed = False


def _raise(signum: int, _frame: FrameType | None) -> None:
    if _armed:
        raise SystemSignal(signum)


def arm() -> None:
    """From now on SIGTERM and SIGHUP raise :class:`SystemSignal` in the main thread (a no-op
    elsewhere), until :func:`disarm`."""
    global _armed
    if threading.current_thread() is not threading.main_thread():
        return
    _armed = True
    for sig in SYSTEM_SIGNALS:
        signal.signal(sig, _raise)


def disarm() -> None:
    """The run took SIGTERM and SIGHUP over (it writes its own end): the handlers :func:`arm`
    installed no longer raise when they are put back."""
    global _armed
    _armed = False


def reason_for(signum: int) -> str:
    """The stop's reason for a system signal ``signum`` received before the run started."""
    return f"stopped by {signal.Signals(signum).name} before the run started"


def wants_json(argv: Sequence[str]) -> bool:
    """True when ``desk run``'s arguments ``argv`` (after ``run``) ask for ``--json`` lines
    (``--`` ends the flags)."""
    for arg in argv:
        if arg == "--":
            return False
        if arg == "--json":
            return True
    return False


def stopped_before_start(
    json: bool,
    out: TextIO | None = None,
    err: TextIO | None = None,
    *,
    by: BaseException | None = None,
) -> int:
    """Say that the run was stopped before it started: by the person (Ctrl+C) or, when ``by``
    is a :class:`SystemSignal`, by the system; return the exit status.

    Further signals while this is written are ignored (it takes a moment at most).

    Args:
        json: write the ``turn.completed`` line (``desk run --json``).
        out: where the line goes (stdout).
        err: where the one line for the person goes (stderr).
        by: the exception that ended the start (``KeyboardInterrupt`` or a
            :class:`SystemSignal`).

    Returns:
        130 (:data:`EXIT_USER_STOP`) for Ctrl+C, 143 (:data:`EXIT_SYSTEM_STOP`) for SIGTERM or
        SIGHUP.
    """
    disarm()  # this writes the run's end: nothing raises into it
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    main = threading.current_thread() is threading.main_thread()
    stopping = (signal.SIGINT, *SYSTEM_SIGNALS)
    previous = [(sig, signal.signal(sig, signal.SIG_IGN)) for sig in stopping] if main else []
    try:
        from agent.outcome import TurnStatus
        from agent.stops import StopRequest, Surface
        from agent.terminal_text import terminal_safe
        from contract.envelope import StopReceipt
        from contract.events import MessageComplete

        if isinstance(by, SystemSignal):
            stop = StopRequest.by_system(Surface.GATEWAY_SHUTDOWN, reason_for(by.signum))
        else:
            stop = StopRequest.by_user(Surface.HEADLESS_SIGINT, REASON)
        if json:
            from tui_gateway.wire.run_lines import RunLines

            # nothing was open and no worker ran: nothing to close, nothing to wait for
            receipt = StopReceipt(stop.issuer.value, stop.surface.value, stop.reason, None, None)
            reason = stop.exit_reason()
            complete = MessageComplete("", TurnStatus.INTERRUPTED, reason, "", stop=receipt)
            RunLines(out).close("", complete)
        with contextlib.suppress(OSError, ValueError):  # stderr closed: nobody to tell
            print(terminal_safe(f"desk: {stop.exit_reason()}: {stop.reason}"), file=err, flush=True)
    finally:
        for sig, handler in previous:
            signal.signal(sig, handler)
    return EXIT_SYSTEM_STOP if isinstance(by, SystemSignal) else EXIT_USER_STOP
