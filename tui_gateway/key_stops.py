"""The key rule: a stop key stops what runs in its session now, or the prompt entered before it.

A person's stop key means "stop this session's work", not "stop the turn my screen showed".
The frontend stamps both keys with the moment they were made (``time.monotonic()``, the same
clock on one host): the Enter that sends a prompt travels with ``prompt.submit`` as
``entered_at``, the stop key with ``session.interrupt`` as ``keyed_at``. The gateway then
decides, under the session's lock, so the order in which the two calls arrive does not matter:

- a turn runs that was entered at or before the key (or by no key at all): it is stopped;
- a turn runs that was entered after the key: nothing is stopped (the key was for work that
  has ended; a key is never spent on a later prompt);
- nothing runs: the stop is armed (:class:`~tui_gateway.state.ArmedStop`). The next keyed
  submit takes it: one entered at or before the key that runs now is stopped at once (its
  submit was in flight when the key reached the gateway); one entered after the key drops it.
  A submit that is queued behind work another frontend started meanwhile drops it too.

These functions only read and change the session's fields (call them with ``session.lock``
held); :class:`~tui_gateway.booking.BookingOffice` books the stop they choose.
"""

from __future__ import annotations

from agent.stops import StopRequest
from tui_gateway.state import ArmedStop, Session, Turn


def key_target(session: Session, stop: StopRequest, keyed_at: float) -> Turn | None:
    """The turn a stop key made at ``keyed_at`` stops, or None (then arms it when idle).

    Call with ``session.lock`` held.

    Args:
        session: the session.
        stop: the person's stop.
        keyed_at: ``time.monotonic()`` when the key was made.

    Returns:
        the running turn unless it was entered after the key; None when nothing runs (the
        stop is armed for an in-flight submit) or the running turn is a later prompt's.
    """
    running = session.running
    if running is None:
        session.armed_stop = ArmedStop(stop, keyed_at)
        return None
    if running.entered_at is not None and running.entered_at > keyed_at:
        return None
    return running


def take_armed(session: Session, turn: Turn, runs_now: bool) -> StopRequest | None:
    """A keyed submit of ``turn`` arrived: the armed stop it must obey, if any.

    Call with ``session.lock`` held. A submit without ``entered_at`` (no key sent it) leaves
    the armed stop alone; a keyed one always uses it up.

    Args:
        session: the session.
        turn: the new turn (its ``entered_at`` set).
        runs_now: True when it starts now, False when it is queued behind a running turn.

    Returns:
        the armed stop when ``turn`` was entered at or before that key and runs now; else None.
    """
    armed = session.armed_stop
    if armed is None or turn.entered_at is None:
        return None
    session.armed_stop = None
    if runs_now and turn.entered_at <= armed.keyed_at:
        return armed.stop
    return None
