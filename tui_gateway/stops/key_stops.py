"""The key rule: a stop key stops what runs in its session now, or the prompt entered before it.

A person's stop key means "stop this session's work", not "stop the turn my screen showed".
The frontend stamps both keys with the moment they were made (``time.monotonic()``, the same
clock on one host): the Enter that sends a prompt travels with ``prompt.submit`` as
``entered_at``, the stop key with ``session.interrupt`` as ``keyed_at``. The gateway then
decides, under the session's lock, so the order in which the two calls arrive does not matter:

- a turn runs that was entered at or before the key (or by no key at all): it is stopped;
  when it is stopping already, the key goes to the first queued prompt entered before it
  that no key stops yet (stopped as it starts), and when there is none it is armed, as below,
  for a prompt whose submit is still on its way (``one⏎ Esc two⏎ Esc`` read in four reads: the
  second key reached the gateway before ``two`` did, and was spent on ``one`` again);
- a turn runs that was entered after the key: nothing is stopped (the key was for work that
  has ended; a key is never spent on a later prompt);
- nothing runs: the stop is armed (:class:`~tui_gateway.sessions.state.ArmedStop`), behind any armed
  before it. A keyed submit drops the armed keys made before its Enter and takes the first
  one made at or after it: the prompt is stopped as its turn starts, before any request is
  sent, whether it runs now (its submit was in flight when the key reached the gateway) or
  waits behind a turn (a burst ``one⏎ Esc two⏎ Esc`` read at once: ``two`` waits for ``one``
  to close).

These functions only read and change the session's fields (call them with ``session.lock``
held); :class:`~tui_gateway.stops.booking.BookingOffice` books the stop they choose.
"""

from __future__ import annotations

from agent.stops import StopRequest
from tui_gateway.sessions.state import ArmedStop, Session, Turn


def key_target(session: Session, stop: StopRequest, keyed_at: float) -> Turn | None:
    """The turn a stop key made at ``keyed_at`` stops, or None (then arms it when idle).

    Call with ``session.lock`` held.

    Args:
        session: the session.
        stop: the person's stop.
        keyed_at: ``time.monotonic()`` when the key was made.

    Returns:
        the running turn unless it was entered after the key; None when nothing runs or the
        running turn is stopping already (the stop goes to the next prompt entered before
        the key, queued or in flight), or when the running turn is a later prompt's.
    """
    running = session.running
    if running is None:
        session.armed_stops.append(ArmedStop(stop, keyed_at))
        return None
    if running.entered_at is not None and running.entered_at > keyed_at:
        return None
    if _stopping(session, running):  # the next prompt's key
        waiting = _queued_before(session, keyed_at)
        if waiting is not None:
            waiting.pending_stop = stop  # stopped as it starts
        else:  # for a prompt entered before it whose submit is still on its way
            session.armed_stops.append(ArmedStop(stop, keyed_at))
        return None
    session.key_stopped = ArmedStop(stop, keyed_at)
    return running


def _stopping(session: Session, running: Turn) -> bool:
    """True when ``running`` is stopping already, or is about to: its worker obeys an armed
    key as it starts, or a "stop and send" prompt waits behind it (its stop is on its way)."""
    if running.agent.stop_request is not None or running.pending_stop is not None:
        return True
    return any(turn.urgent for turn in session.queue)


def _queued_before(session: Session, keyed_at: float) -> Turn | None:
    """The first queued prompt entered at or before the key that no key stops yet: a key made
    after it, while the running turn was already stopping, is its (``one⏎ Esc two⏎ Esc`` read
    while the desk started, or faster than ``one`` closes)."""
    for turn in session.queue:
        entered = turn.entered_at
        if entered is not None and entered <= keyed_at and turn.pending_stop is None:
            return turn
    return None


def take_armed(session: Session, turn: Turn) -> None:
    """A keyed submit of ``turn`` arrived: keep on it (``turn.pending_stop``) the armed stop it
    must obey, if any; its worker obeys it as the turn starts, before anything is sent (a turn
    that runs now as much as one queued behind a running turn).

    Call with ``session.lock`` held. A submit without ``entered_at`` (no key sent it) leaves
    the armed stops alone; a keyed one drops those made before its Enter and takes the first
    made at or after it.

    Args:
        session: the session.
        turn: the new turn (its ``entered_at`` set).
    """
    entered = turn.entered_at
    if entered is None:
        return
    armed = session.armed_stops
    while armed and armed[0].keyed_at < entered:
        armed.pop(0)  # made before this Enter: for work that ended, never for this prompt
    if armed:
        key = armed.pop(0)
        turn.pending_stop, session.key_stopped = key.stop, key


def take_overtaken(session: Session, turn: Turn) -> None:
    """A "stop and send" submit of ``turn`` arrived: when a stop key made after ``turn``'s own
    key stopped a turn first (the key overtook the submit on its way, and stopped the turn
    that the send stops anyway), that key was for ``turn``: ``turn`` keeps it and is stopped
    as it starts. The same outcome as when the submit arrives first and the key finds the
    running turn stopping (:func:`key_target`). A key is taken once.

    Call with ``session.lock`` held.

    Args:
        session: the session.
        turn: the new, urgent turn (its ``entered_at`` set, or None: then nothing happens).
    """
    key, entered = session.key_stopped, turn.entered_at
    if key is None or entered is None or key.keyed_at < entered or turn.pending_stop is not None:
        return
    session.key_stopped = None
    turn.pending_stop = key.stop
