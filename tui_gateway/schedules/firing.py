"""One firing of a schedule: its prompt run as a turn of the schedule's session.

The firing was claimed already (:meth:`~agent.store.protocol.Firings.claim_firing`: this host
runs it). It opens the schedule's session on this gateway (the one the store names, made and
named after the schedule the first time; held by another host, it waits for it), submits the
prompt, notes the turn on the firing's row, and waits for the turn's one outcome. Past the
schedule's ``timeout`` (counted from the firing's start) it stops the turn as the system
(``interrupted_by_system(schedule.timeout)``), and when the host stops, as the shutdown
(``gateway.shutdown``). A person's stop, from any surface, is booked by the gateway as any
other (``interrupted_by_user``). The outcome is noted on the firing's row.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from agent.outcome import ExitReason
from agent.stops import StopRequest, Surface
from agent.store import Firings
from contract.errors import GatewayError
from tui_gateway.gateway import Gateway
from tui_gateway.sessions.state import Turn
from tui_gateway.settings.schedule_settings import ScheduleSettings
from tui_gateway.turns.kinds import TurnStage

SESSION_BUSY = "failed(SessionBusy)"
"""A firing's outcome when its session stayed open elsewhere until its timeout (no turn ran)."""

RETRY_S = 0.05
"""Seconds between two tries to open a session another host (or desk) holds."""

WAIT_STEP_S = 0.05
"""Seconds between two looks, while a firing's turn runs, at its deadline and the host's stop."""


class NoTurn(Exception):
    """The firing ends without a turn; ``outcome`` says why (``failed(<class>)``)."""

    def __init__(self, outcome: str, message: str) -> None:
        super().__init__(message)
        self.outcome = outcome
        self.message = message


@dataclass(frozen=True, slots=True)
class RunningFiring:
    """A firing whose turn was submitted.

    Attributes:
        spec: its schedule.
        due_at: its due time, unix seconds.
        gateway: the gateway its turn runs on.
        session_id: the schedule's session.
        turn_id: its turn.
    """

    spec: ScheduleSettings
    due_at: float
    gateway: Gateway
    session_id: str
    turn_id: str


def open_session(
    gateway: Gateway,
    firings: Firings,
    spec: ScheduleSettings,
    deadline: float,
    stopping: threading.Event,
) -> str:
    """The schedule's session, live on ``gateway``: the one the store names, or a new one
    titled with the schedule's name (the first made wins when two hosts make one at once).

    Args:
        gateway: where the turn runs.
        firings: the store's firings (the schedule's session).
        spec: the schedule.
        deadline: ``time.monotonic()`` past which waiting for a held session gives up.
        stopping: set when the host stops (waiting gives up).

    Raises:
        NoTurn: the session stayed held elsewhere until the deadline, or the host stops.
        GatewayError: the gateway refused (shutting down...).
    """
    while True:
        session_id = firings.schedule_session(spec.name)
        if session_id is None:
            made = gateway.session_create(title=spec.name)
            session_id = firings.bind_session(spec.name, made)
            if session_id == made:
                return made
            gateway.session_delete(made)  # another host made one first: its session it is
        try:
            gateway.session_resume(session_id)
            return session_id
        except GatewayError as exc:
            if time.monotonic() >= deadline or stopping.is_set():
                raise NoTurn(SESSION_BUSY, f"its session is open elsewhere ({exc})") from None
        stopping.wait(RETRY_S)


def run_firing(
    gateway: Gateway,
    firings: Firings,
    spec: ScheduleSettings,
    due_at: float,
    *,
    stopping: threading.Event,
    on_running: Callable[[RunningFiring, bool], None],
) -> str:
    """Run one claimed firing to its outcome, and note the outcome on its row.

    Args:
        gateway: where its turn runs.
        firings: the store's firings.
        spec: the schedule.
        due_at: the firing's due time (its row's key), unix seconds.
        stopping: set when the host stops: a session held elsewhere is waited for no more.
        on_running: told ``(firing, True)`` once its turn is submitted, ``(firing, False)``
            once the turn has its outcome (the scheduler stops it at shutdown, answers its
            approvals).

    Returns:
        the outcome: the turn's exit reason, or why no turn ran (``failed(<class>)``).
    """
    deadline = time.monotonic() + spec.timeout_s
    try:
        session_id = open_session(gateway, firings, spec, deadline, stopping)
        if spec.model is not None:
            gateway.session_set_model(session_id, spec.model)
        sent = gateway.prompt_submit(session_id, spec.prompt)
        turn = gateway.turn(session_id, sent.turn_id)
    except NoTurn as exc:
        firings.end_firing(spec.name, due_at, exc.outcome)
        raise
    except GatewayError as exc:
        firings.end_firing(spec.name, due_at, "failed(GatewayError)")
        raise NoTurn("failed(GatewayError)", exc.message) from exc
    firings.start_firing(spec.name, due_at, session_id, sent.turn_id)
    running = RunningFiring(spec, due_at, gateway, session_id, sent.turn_id)
    on_running(running, True)
    try:
        outcome = _outcome(running, turn, deadline, stopping)
    finally:
        on_running(running, False)
    firings.end_firing(spec.name, due_at, outcome)
    return outcome


def _outcome(firing: RunningFiring, turn: Turn, deadline: float, stopping: threading.Event) -> str:
    """Wait for the firing's turn to end, stopping it past the deadline (``schedule.timeout``)
    or when the host stops (``gateway.shutdown``), each once; returns its exit reason.

    A turn still waiting in its session's queue (behind an earlier firing, or a person's
    turn) when it should stop never runs: it is taken out of the queue, and the firing's
    outcome is the stop's.
    """
    gateway, sid, tid = firing.gateway, firing.session_id, firing.turn_id
    sent: set[Surface] = set()
    while not turn.done.wait(WAIT_STEP_S):
        if stopping.is_set():
            stop = StopRequest.by_system(Surface.GATEWAY_SHUTDOWN, "desk serve is shutting down")
        elif time.monotonic() >= deadline:
            timeout = firing.spec.timeout_s
            stop = StopRequest.by_system(
                Surface.SCHEDULE_TIMEOUT, f"past the schedule's timeout of {timeout:g} s"
            )
        else:
            continue
        if turn.state is TurnStage.QUEUED and gateway.prompt_remove(sid, tid):
            return str(ExitReason.interrupted_by_system(stop.surface))
        if stop.surface not in sent:
            sent.add(stop.surface)
            gateway.session_interrupt(sid, stop, turn_id=tid)
    assert turn.result is not None  # the booking office books every stopped turn's outcome
    return str(turn.result.exit_reason)
