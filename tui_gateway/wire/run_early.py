"""``desk run`` stopped by Ctrl+C (SIGINT) before its turn existed.

Starting a run takes a while on a small machine (imports, the demo model, the gateway and its
store). A Ctrl+C meanwhile ends the run at once, as the person's stop, with what a stopped run
says: one line on stderr, exit status 130 and, with ``--json``, exactly one ``turn.completed``
line on stdout (no ``session.started``: no session existed, so its ``session_id`` is ``""``).
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Sequence
from typing import TextIO

EXIT_USER_STOP = 130
"""The exit status of a run the person stopped (as :data:`~tui_gateway.wire.headless`'s)."""

REASON = "stopped with Ctrl+C before the run started"
"""The stop's reason, in the ``turn.completed`` line and on stderr."""


def wants_json(argv: Sequence[str]) -> bool:
    """True when ``desk run``'s arguments ``argv`` (after ``run``) ask for ``--json`` lines
    (``--`` ends the flags)."""
    for arg in argv:
        if arg == "--":
            return False
        if arg == "--json":
            return True
    return False


def stopped_before_start(json: bool, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Say that the run was stopped by the person before it started; return 130.

    A further Ctrl+C while this is written is ignored (it takes a moment at most).

    Args:
        json: write the ``turn.completed`` line (``desk run --json``).
        out: where the line goes (stdout).
        err: where the one line for the person goes (stderr).

    Returns:
        130 (:data:`EXIT_USER_STOP`).
    """
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
    try:
        from agent.outcome import TurnStatus
        from agent.stops import StopRequest, Surface
        from agent.terminal_text import terminal_safe
        from contract.envelope import StopReceipt
        from contract.events import MessageComplete

        stop = StopRequest.by_user(Surface.HEADLESS_SIGINT, REASON)
        if json:
            from tui_gateway.wire.run_lines import RunLines

            # nothing was open and no worker ran: nothing to close, nothing to wait for
            receipt = StopReceipt(stop.issuer.value, stop.surface.value, REASON, None, None)
            reason = stop.exit_reason()
            complete = MessageComplete("", TurnStatus.INTERRUPTED, reason, "", stop=receipt)
            RunLines(out).close("", complete)
        with contextlib.suppress(OSError, ValueError):  # stderr closed: nobody to tell
            print(terminal_safe(f"desk: {stop.exit_reason()}: {REASON}"), file=err, flush=True)
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    return EXIT_USER_STOP
