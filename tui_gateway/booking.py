"""The booking office: where every stop the gateway takes is booked.

A :class:`~agent.stops.StopRequest` comes in from one of the gateway's contract methods
(``session.interrupt``, ``compression.cancel``, ``console.cancel``, a frontend that went away, an
eviction, a deletion, the shutdown). The office

1. **routes** it to what it stops: a :class:`Route`. There are three: :class:`LocalTurn` (a
   turn on this gateway's worker, the compression inside it first, then its agent),
   :class:`ConsoleCommand`, and :class:`~tui_gateway.remote.RemoteTurn`: a turn running on
   another host (several gateways on one PostgreSQL store), reached with a durable stop row
   plus ``NOTIFY`` when the session is not live here (:meth:`BookingOffice.route_elsewhere`);
   that host books it as if it had been asked there;
2. **decides what happens to the queued prompts** of the session (:class:`QueuePolicy`): kept
   for a user stop of the running turn, dropped and saved as not sent for a system stop,
   forgotten for a deletion;
3. **fixes the turn's outcome exactly once** (:meth:`BookingOffice.settle`): the first outcome
   booked stands, whether the worker's result or the one a stop gives a worker that outlived
   the shutdown bound; a late result never overwrites it.

A soft stop (``hard=False``) is refused with a ``GatewayError`` (code -32602) until the steer
(soft interrupt at the next model call) is built: nothing here ignores one silently.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from agent.compression import Compressor, FenceState
from agent.events import TurnResult
from agent.outcome import TurnStatus
from agent.provider.types import ChatMessage
from agent.stops import SOFT_NOT_SUPPORTED, StopRequest, Surface
from agent.store import StopKind
from tui_gateway.console import Console
from tui_gateway.events import Payload, PromptDropped, SessionEvicted, StopReceipt, TurnState
from tui_gateway.kinds import TurnActivity, TurnKind, TurnStage
from tui_gateway.persistence import Persistence
from tui_gateway.remote import RemoteStops
from tui_gateway.session_table import SessionTable
from tui_gateway.state import Session, Turn
from tui_gateway.types import GatewayError

Publish = Callable[[Session | None, Payload], None]
"""Sends a payload for a session (None: gateway-wide); never blocks."""

ABANDONED = "the worker did not exit within the shutdown bound"
"""The error booked for a turn whose worker outlived the shutdown bound."""


class QueuePolicy(StrEnum):
    """What a stop does to the prompts queued behind the running turn."""

    KEEP = "keep"
    """A user stop of the running turn: the person asked for them; the next one starts as soon
    as the stopped turn has closed its connection."""
    DROP = "drop"
    """A system stop (shutdown, eviction, a frontend gone): dropped, and saved as turns that
    never ran (``not sent: <reason>``) once the running turn is saved."""
    FORGET = "forget"
    """A deletion, or the person removing one: dropped and never saved."""


class Route(Protocol):
    """Something running that a stop can reach."""

    def deliver(self, stop: StopRequest) -> str | None:
        """Hard-stop it with ``stop``; the id of what was stopped, or None when it had ended."""
        ...


@dataclass(frozen=True, slots=True)
class LocalTurn:
    """A turn running on this gateway's worker.

    The compression inside it is stopped first (before commit admission that rolls it back;
    after, the commit completes and the stop ends the rest of the turn), then its agent, which
    shuts the provider socket down and cancels the turn's task.
    """

    session: Session
    turn: Turn
    publish: Publish

    def deliver(self, stop: StopRequest) -> str:
        """Stop the turn; returns its id."""
        compressor = self.turn.compressor
        if compressor is not None:
            compressor.interrupt(stop)
        self.turn.agent.interrupt(stop)
        stopping = TurnState(self.turn.turn_id, TurnActivity.STOPPING, stop.reason)
        self.publish(self.session, stopping)
        return self.turn.turn_id


@dataclass(frozen=True, slots=True)
class ConsoleCommand:
    """A console command, queued (dropped unrun) or running (its scope is cancelled)."""

    console: Console
    command_id: str

    def deliver(self, stop: StopRequest) -> str | None:
        """Cancel the command; returns its id, or None when it had finished."""
        return self.command_id if self.console.cancel(self.command_id, stop) else None


def receipt(turn: Turn) -> StopReceipt | None:
    """The receipt of the stop booked as the turn's outcome, from the gateway's measurements.

    Returns:
        None when no stop ended the turn (or no outcome is booked yet).
    """
    result = turn.result
    if result is None or result.stop is None:
        return None
    stop = result.stop
    timings = result.timings
    return StopReceipt(
        issuer=stop.issuer.value,
        surface=stop.surface.value,
        reason=stop.reason,
        closed_ms=timings.stop_to_closed_ms if timings is not None else None,
        exited_ms=turn.exited_ms(stop),
        children_ended=result.children_ended,
    )


class BookingOffice:
    """Routes every stop, decides the queue's fate and books each turn's outcome once.

    Thread-safe: routes may be called from any thread; :meth:`settle` and :meth:`turn_saved`
    from the turn's worker.

    Args:
        table: the live sessions.
        persistence: the store's writes (forgotten and not-sent prompts, abandoned turns).
        console: the console, for :class:`ConsoleCommand` routes.
        publish: sends a payload for a session.
        wait_s: how long an eviction or a deletion waits for the stopped turn's worker, in
            seconds.
        remote: the stops to and from other hosts of a shared store, or None.
    """

    def __init__(
        self,
        table: SessionTable,
        persistence: Persistence,
        console: Console,
        publish: Publish,
        *,
        wait_s: float,
        remote: RemoteStops | None = None,
    ) -> None:
        self._table = table
        self._remote = remote
        self._persistence = persistence
        self._console = console
        self._publish = publish
        self._wait_s = wait_s
        # Prompts a system stop dropped, saved as not sent once the turn that was running
        # ahead of them (the key) is saved: turn id -> (its session, dropped prompts). Added
        # under the session's lock while that turn is its running one, so before its worker
        # moves on and pops the entry; popped under _unsent_lock, so one caller gets it.
        self._unsent: dict[str, tuple[Session, list[tuple[Turn, StopRequest]]]] = {}
        self._unsent_lock = threading.Lock()

    # -- routes --------------------------------------------------------------------------------

    def route(self, session: Session, turn: Turn) -> Route:
        """The route to a running turn of ``session``, live on this gateway."""
        return LocalTurn(session, turn, self._publish)

    def route_elsewhere(self, session_id: str, turn_id: str | None, kind: StopKind) -> Route:
        """The route to the turn of a session that is not live here: on another host.

        Raises:
            GatewayError: no such session here, and no turn of it runs on another host
                (code -32602), or the store cannot be read.
        """
        found = None if self._remote is None else self._remote.route(session_id, turn_id, kind)
        if found is None:
            raise GatewayError(f"no session {session_id!r}", code=-32602)
        return found

    def book(
        self,
        session: Session,
        stop: StopRequest,
        queue: QueuePolicy,
        turn_id: str | None = None,
    ) -> tuple[Turn | None, int]:
        """Book ``stop`` on the session: its queued prompts as ``queue`` says, then its running
        turn (only ``turn_id``, when given) is hard-stopped through its :meth:`route`.

        A queue only ever waits behind a running turn (the runner moves the next prompt up
        under the same lock), so prompts dropped with :attr:`QueuePolicy.DROP` always have a
        turn to be saved after.

        Returns:
            the turn the stop was sent to (or None) and how many queued prompts were dropped.
        """
        with session.lock:
            running = session.running
            queued = [] if queue is QueuePolicy.KEEP else list(session.queue)
            if queued:
                session.queue.clear()
            for turn in queued:
                turn.state = TurnStage.DONE
            prompts = [t for t in queued if t.kind == TurnKind.PROMPT]
            if prompts and queue is QueuePolicy.DROP and running is not None:
                with self._unsent_lock:
                    _session, later = self._unsent.setdefault(running.turn_id, (session, []))
                    later.extend((turn, stop) for turn in prompts)
        if prompts and queue is QueuePolicy.FORGET:
            self._persistence.prompts_removed(session, prompts)
        for turn in queued:
            dropped = PromptDropped(turn_id=turn.turn_id, text=turn.prompt, reason=stop.reason)
            self._publish(session, dropped)
        if running is None or (turn_id is not None and running.turn_id != turn_id):
            return None, len(queued)
        self.route(session, running).deliver(stop)
        return running, len(queued)

    def interrupt(
        self, session_id: str, stop: StopRequest, turn_id: str | None = None
    ) -> str | None:
        """``session.interrupt``: hard-stop the running turn; queued prompts are kept.

        Returns:
            the id of the turn the stop was sent to, or None when nothing ran.

        Raises:
            GatewayError: unknown session, or a soft stop (code -32602).
        """
        _require_hard(stop)
        session = self._table.find(session_id)
        if session is None:  # live on another host, or nowhere
            return self.route_elsewhere(session_id, turn_id, StopKind.TURN).deliver(stop)
        running, _kept = self.book(session, stop, QueuePolicy.KEEP, turn_id)
        return running.turn_id if running is not None else None

    def cancel_compression(self, session_id: str, stop: StopRequest) -> bool:
        """``compression.cancel``: hard-stop the running compression (the turn running it).

        Returns:
            False when no compression runs in the session, or its commit was admitted already.

        Raises:
            GatewayError: unknown session, or a soft stop (code -32602).
        """
        _require_hard(stop)
        session = self._table.find(session_id)
        if session is None:  # live on another host (its gateway checks the fence), or nowhere
            route = self.route_elsewhere(session_id, None, StopKind.COMPRESSION)
            return route.deliver(stop) is not None
        with session.lock:
            turn = session.running
        if (
            turn is None
            or turn.compressor is None
            or turn.compressor.fence.state != FenceState.OPEN
        ):
            return False
        return self.interrupt(session_id, stop, turn_id=turn.turn_id) is not None

    def cancel_command(self, command_id: str, stop: StopRequest) -> bool:
        """``console.cancel``: drop a queued command, or hard-stop a running one.

        Returns:
            False when the command had already finished.

        Raises:
            GatewayError: a soft stop (code -32602).
        """
        _require_hard(stop)
        return ConsoleCommand(self._console, command_id).deliver(stop) is not None

    def remove_prompt(self, session_id: str, turn_id: str) -> bool:
        """The person removes a queued prompt before it runs: it is forgotten.

        Returns:
            False when it is not queued any more.
        """
        session = self._table.get(session_id)
        with session.lock:
            turn = next((t for t in session.queue if t.turn_id == turn_id), None)
            if turn is None:
                return False
            session.queue.remove(turn)
            turn.state = TurnStage.DONE
        if turn.kind == TurnKind.PROMPT:
            self._persistence.prompts_removed(session, [turn])
        self._publish(session, PromptDropped(turn_id=turn_id, text=turn.prompt, reason="removed"))
        return True

    def frontend_gone(self) -> int:
        """The frontend went away: stop every running turn and console command (system stop).

        Returns:
            how many turns and commands were stopped.
        """
        stop = StopRequest.by_system(Surface.API_DISCONNECT, "the frontend went away")
        stopped = sum(
            self.book(s, stop, QueuePolicy.DROP)[0] is not None for s in self._table.all()
        )
        return stopped + self._console.cancel_all(stop)

    def evict(self, session: Session) -> None:
        """Stop the session's work as ``session.evicted``, wait for it, then drop the session."""
        stop = StopRequest.by_system(Surface.SESSION_EVICTED, "too many live sessions")
        self._stop_and_wait(session, stop, QueuePolicy.DROP)
        self._publish(session, SessionEvicted(reason=stop.reason))
        self._table.remove(session.session_id)

    def delete(self, session: Session) -> None:
        """Stop the session's work as ``session.delete`` (a user stop), wait, drop the session;
        its queued prompts are forgotten."""
        stop = StopRequest.by_user(Surface.SESSION_DELETE, "the session was deleted")
        self._stop_and_wait(session, stop, QueuePolicy.FORGET)
        self._table.remove(session.session_id)

    def stop_all(self, stop: StopRequest) -> tuple[int, int]:
        """The shutdown's stop: every session's queue dropped, every running turn and console
        command stopped.

        Returns:
            how many running turns were stopped and how many queued prompts were dropped.
        """
        stopped, dropped = 0, 0
        for session in self._table.all():
            running, count = self.book(session, stop, QueuePolicy.DROP)
            stopped += running is not None
            dropped += count
        self._console.cancel_all(stop)
        return stopped, dropped

    def close_stuck(self, sessions: Iterable[Session], stop: StopRequest) -> None:
        """After the shutdown bound: book the outcome of every turn whose worker is still
        running (so it is never left open), then save every prompt dropped behind one."""
        for session in sessions:
            with session.lock:
                stuck = session.running
            if stuck is None or stuck.done.is_set():
                continue
            self.settle(session, stuck, _stopped_result(stop, ABANDONED))
            self._persistence.turn_abandoned(session, stuck, stop, ABANDONED)
        with self._unsent_lock:
            behind = list(self._unsent)
        for turn_id in behind:
            self.turn_saved(turn_id)

    # -- the turn's side -----------------------------------------------------------------------

    def compression_started(self, turn: Turn, compressor: Compressor) -> None:
        """The turn's compressor exists: stops reach it from now on, and one that came before
        it existed (booked on the turn's agent) reaches it now."""
        turn.compressor = compressor
        pending = turn.agent.stop_request
        if pending is not None:
            compressor.interrupt(pending)

    def settle(self, session: Session, turn: Turn, result: TurnResult) -> TurnResult:
        """Book ``result`` as the turn's outcome unless one is booked already.

        Returns:
            the booked outcome (``result``, or the one booked first).
        """
        with session.lock:
            if turn.result is None:
                turn.result = result
            return turn.result

    def turn_saved(self, turn_id: str) -> None:
        """The turn ``turn_id`` is saved: save the prompts a system stop dropped behind it."""
        with self._unsent_lock:
            entry = self._unsent.pop(turn_id, None)
        if entry is None:
            return
        session, dropped = entry
        with session.lock:  # as the store has them: user messages of turns that never ran
            session.history.extend(ChatMessage(role="user", content=t.prompt) for t, _ in dropped)
        self._persistence.prompts_unsent(session, dropped)

    # -- inside --------------------------------------------------------------------------------

    def _stop_and_wait(self, session: Session, stop: StopRequest, queue: QueuePolicy) -> None:
        running, _dropped = self.book(session, stop, queue)
        if running is not None:
            running.done.wait(self._wait_s)


def _require_hard(stop: StopRequest) -> None:
    if not stop.hard:
        raise GatewayError(SOFT_NOT_SUPPORTED, code=-32602)


def _stopped_result(stop: StopRequest, error: str) -> TurnResult:
    """The outcome booked for a turn ``stop`` ended without a result from its worker."""
    return TurnResult(
        status=TurnStatus.INTERRUPTED,
        exit_reason=stop.exit_reason(),
        text="",
        partial=True,
        stop=stop,
        error=error,
    )


__all__ = [
    "ABANDONED",
    "BookingOffice",
    "ConsoleCommand",
    "LocalTurn",
    "QueuePolicy",
    "Route",
    "receipt",
]
