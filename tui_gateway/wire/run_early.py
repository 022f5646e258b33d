"""``desk run`` stopped by a signal before its turn existed.

Starting a run takes a while on a small machine (imports, the demo model, the gateway and its
store). A Ctrl+C (SIGINT) meanwhile ends the run at once, as the person's stop, with what a
stopped run says: one line on stderr, exit status 130 and, with ``--json``, exactly one
``turn.completed`` line on stdout (no ``session.started``: no session existed, so its
``session_id`` is ``""``). SIGTERM and SIGHUP end it the same way, as the system's stop
(``interrupted_by_system(gateway.shutdown)``, exit status 143). :func:`arm` makes SIGINT raise
:class:`Interrupted` (a ``KeyboardInterrupt``) and SIGTERM and SIGHUP :class:`SystemSignal` in
the main thread, until the run takes them over (:func:`disarm`). Before that, from the entry
point's first lines, :func:`hold` keeps them for :func:`arm`: one handler, :func:`on_signal`,
from the first lines to the exit, so no signal meets the default action (the process killed,
nothing written), nor Python's own ``KeyboardInterrupt`` where nothing catches it (a
traceback), between phases. Each signal is also kept until the run acts on it: a raise Python
dropped (in a weakref callback or a ``__del__``, where it reports the exception and goes on)
loses no Ctrl+C (:func:`pending`, :func:`take_over`).
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


class Interrupted(KeyboardInterrupt):
    """SIGINT (Ctrl+C) received while the run starts (raised in the main thread): the person's
    stop, unwound like Python's own ``KeyboardInterrupt``."""


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


_HOLDING, _ARMED, _RAISED, _DONE = "holding", "armed", "raised", "done"
_state = _DONE
"""``_HOLDING``: a signal is kept for :func:`arm`; ``_ARMED``: the next one is kept and raised;
``_RAISED``: one was raised (later ones change nothing); ``_DONE``: the run writes its own end
(or is writing it), and a signal does nothing here."""

_kept: list[int] = []
"""Signals received and not yet acted on by whoever ends the run, oldest first. A raise can
be lost (Python drops an exception raised in a weakref callback or a ``__del__``, and an
import may turn it into another error), so the signal stays here until :func:`take_over`."""


def stop_raised(signum: int) -> KeyboardInterrupt:
    """What a signal received while the run starts raises: :class:`Interrupted` for SIGINT
    (the person's stop), :class:`SystemSignal` for SIGTERM and SIGHUP (the system's)."""
    return Interrupted(signum) if signum == signal.SIGINT else SystemSignal(signum)


def on_signal(signum: int, _frame: FrameType | None) -> None:
    """The handler of SIGINT, SIGTERM and SIGHUP from desk's first line to the run's exit.

    Holding, the signal is kept (:func:`arm` raises it); armed, it is kept and raises
    (:func:`stop_raised`) once (a second signal while the first unwinds does nothing: the stop
    is under way); done, it does nothing (whoever took the signals over writes the run's end).
    """
    global _state
    if _state in (_HOLDING, _ARMED):
        _kept.append(signum)
    if _state == _ARMED:
        _state = _RAISED
        raise stop_raised(signum)


def _quiet_lost_raise(info: sys.UnraisableHookArgs) -> None:
    """Python's report of an exception it had to drop, without the lost raises of a kept
    signal (a traceback for the person, though nothing is wrong: the signal is acted on)."""
    if not isinstance(info.exc_value, SystemSignal | Interrupted):
        sys.__unraisablehook__(info)


def _install() -> None:
    for sig in SYSTEM_SIGNALS:
        signal.signal(sig, on_signal)
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:  # started ignoring it: it stays so
        signal.signal(signal.SIGINT, on_signal)
    sys.unraisablehook = _quiet_lost_raise


def hold(early: Sequence[int] = ()) -> None:
    """From now on SIGINT, SIGTERM and SIGHUP are kept, not acted on, until :func:`arm` (main
    thread only; a no-op elsewhere). For an entry point's first lines: a signal there is not
    lost, and nothing is raised where no one can catch it yet.

    Args:
        early: signals an earlier handler already kept (raised by :func:`arm`).
    """
    global _state
    if threading.current_thread() is not threading.main_thread():
        return
    _state = _HOLDING
    _install()
    _kept.extend(early)


def arm(early: Sequence[int] = ()) -> None:
    """From now on SIGINT raises :class:`Interrupted`, SIGTERM and SIGHUP :class:`SystemSignal`
    in the main thread (a no-op elsewhere), until :func:`disarm`.

    Args:
        early: signals an earlier handler kept (desk's first line's, before this module loaded).

    Raises:
        Interrupted: a SIGINT was kept and not acted on yet (held, in ``early``, or raised
            where the raise was lost): raised now (the first signal kept decides).
        SystemSignal: the same for SIGTERM or SIGHUP.
    """
    global _state
    if threading.current_thread() is not threading.main_thread():
        return
    _state = _ARMED
    _install()  # the handler of :func:`hold` already, when it ran
    _kept.extend(early)
    if _kept:
        _state = _RAISED
        raise stop_raised(_kept[0])


def pending() -> int | None:
    """The signal received and not yet acted on (None: none), for a start that ended with
    another error: the signal's raise may have been turned into it."""
    return _kept[0] if _kept and _state != _DONE else None


def take_over() -> int | None:
    """The run takes SIGINT, SIGTERM and SIGHUP over (it writes its own end): the handlers
    :func:`arm` installed do nothing from now on, even when they are put back.

    Returns:
        a signal received before and never acted on (its raise was lost), which the run must
        act on now; None when there is none.
    """
    global _state
    signum = pending()
    _state = _DONE
    _kept.clear()
    return signum


def disarm() -> None:
    """:func:`take_over`, for whoever is already writing the run's end."""
    take_over()


def ignore_from_now() -> None:
    """The run's end is written and the process exits: SIGINT, SIGTERM and SIGHUP are
    ignored, so a late one cannot end the exit by the signal (Python puts the default action
    back while it finalizes). Main thread only (a no-op elsewhere)."""
    disarm()
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, *SYSTEM_SIGNALS):
            signal.signal(sig, signal.SIG_IGN)


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
