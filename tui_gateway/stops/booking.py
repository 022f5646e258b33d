"""The booking office: where every stop the gateway takes is booked.

A :class:`~agent.stops.StopRequest` comes in from one of the gateway's contract methods
(``session.interrupt``, ``compression.cancel``, ``console.cancel``, a frontend that went away, an
eviction, a deletion, the shutdown). The office

1. **routes** it to what it stops: a :class:`~tui_gateway.stops.routes.Route`
   (:mod:`tui_gateway.stops.routes`). There are four: :class:`LocalTurn` (a turn on this gateway's
   worker, the compression inside it first, then its agent, whose scope reaches every child
   agent it started), :class:`LocalChild` (one child agent alone), :class:`ConsoleCommand`,
   and :class:`~tui_gateway.stops.remote.RemoteTurn`: a turn running on another host (several
   gateways on one PostgreSQL store), reached with a durable stop row plus ``NOTIFY`` when the
   session is not live here (:meth:`BookingOffice.route_elsewhere`); that host books it as if
   it had been asked there;
2. **decides what happens to the queued prompts** of the session (:class:`QueuePolicy`): kept
   for a user stop of the running turn, dropped and saved as not sent for a system stop,
   forgotten for a deletion; the policies that drop (a system stop, a deletion) also stop the
   session's background child agents whose parent turn has ended;
3. **fixes the turn's outcome exactly once** (:meth:`BookingOffice.settle`): the first outcome
   booked stands, whether the worker's result or the one a stop gives a worker that outlived
   the shutdown bound; a late result never overwrites it.

A soft stop (``hard=False``) is a steer, not a stop: :meth:`BookingOffice.steer` routes it,
with its text, to the running turn's agent, which delivers it at its next model-call boundary
(never cutting a stream, a tool call or a compression). Every stop method refuses a soft one
with a ``GatewayError`` (code -32602): nothing here ignores one silently.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from enum import StrEnum

from agent.compression import Compressor, FenceState
from agent.events import TurnResult
from agent.outcome import TurnStatus
from agent.provider.types import ChatMessage
from agent.steering import Steer
from agent.stops import SOFT_IS_A_STEER, StopRequest, Surface
from agent.store import StopKind
from contract.errors import GatewayError
from contract.events import PromptDropped, SessionEvicted
from tui_gateway.console import Console
from tui_gateway.sessions.persistence import Persistence
from tui_gateway.sessions.session_table import SessionTable
from tui_gateway.sessions.state import Session, Turn
from tui_gateway.stops.key_stops import key_target
from tui_gateway.stops.remote import RemoteStops
from tui_gateway.stops.routes import ConsoleCommand, LocalChild, LocalTurn, Publish, Route, receipt
from tui_gateway.turns.kinds import TurnKind, TurnStage

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


class BookingOffice:
    """Routes every stop, decides the queue's fate and books each turn's outcome once.

    Thread-safe: routes may be called from any thread; :meth:`settle` and :meth:`turn_saved`
    from the turn's worker.

    Args:
        table: the live sessions.
        persistence: the store's writes (forgotten and not-sent prompts, abandoned turns,
            and the text they had streamed).
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
        # What a system stop or a deletion did to the queue behind a running turn (turn id ->
        # policy, stop), for the steers that turn ends without delivering.
        self._fates: dict[str, tuple[QueuePolicy, StopRequest]] = {}

    # -- routes --------------------------------------------------------------------------------

    def route(self, session: Session, turn: Turn) -> Route:
        """The route to a running turn (or child agent) of ``session``, live on this
        gateway."""
        if turn.child is not None:
            return LocalChild(session, turn, self._publish)
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
        keyed_at: float | None = None,
    ) -> tuple[Turn | None, int]:
        """Book ``stop`` on the session: its queued prompts as ``queue`` says, then its running
        turn (only ``turn_id``, when given) is hard-stopped through its :meth:`route`.

        With ``keyed_at`` (a stop key's time) and no ``turn_id``, the key rule chooses the turn
        (:func:`tui_gateway.stops.key_stops.key_target`): not one entered after the key, and when
        nothing runs the stop is armed for the submit in flight.

        A queue only ever waits behind a running turn (the runner moves the next prompt up
        under the same lock), so prompts dropped with :attr:`QueuePolicy.DROP` always have a
        turn to be saved after.

        Returns:
            the turn the stop was sent to (or None) and how many queued prompts were dropped.
        """
        with session.lock:
            running = session.running
            if keyed_at is not None and turn_id is None:
                running = key_target(session, stop, keyed_at)
            queued = [] if queue is QueuePolicy.KEEP else list(session.queue)
            if queued:
                session.queue.clear()
            for turn in queued:
                turn.state = TurnStage.DONE
            prompts = [t for t in queued if t.kind == TurnKind.PROMPT]
            children = [] if queue is QueuePolicy.KEEP else session.live_children()
            if running is not None and queue is not QueuePolicy.KEEP:
                with self._unsent_lock:
                    self._fates.setdefault(running.turn_id, (queue, stop))
            if prompts and queue is QueuePolicy.DROP and running is not None:
                with self._unsent_lock:
                    _session, later = self._unsent.setdefault(running.turn_id, (session, []))
                    later.extend((turn, stop) for turn in prompts)
        if prompts and queue is QueuePolicy.FORGET:
            self._persistence.prompts_removed(session, prompts)
        for turn in queued:
            dropped = PromptDropped(turn_id=turn.turn_id, text=turn.prompt, reason=stop.reason)
            self._publish(session, dropped)
        for child in children:  # background ones whose parent ended too: same stop
            self.route(session, child).deliver(stop)
        if running is None or (turn_id is not None and running.turn_id != turn_id):
            return None, len(queued)
        self.route(session, running).deliver(stop)
        return running, len(queued)

    def interrupt(
        self,
        session_id: str,
        stop: StopRequest,
        turn_id: str | None = None,
        keyed_at: float | None = None,
    ) -> str | None:
        """``session.interrupt``: hard-stop the running turn; queued prompts are kept.

        ``turn_id`` may name a child agent: that child is stopped alone (its own children with
        it), its parent goes on, and nothing queued changes. ``keyed_at`` (without ``turn_id``)
        applies the key rule (:mod:`tui_gateway.stops.key_stops`). Without ``turn_id``, when no
        turn of the session runs, the child agents that outlived their turn are stopped.

        Returns:
            the id of the turn the stop was sent to (the first such child's), or None when
            nothing ran.

        Raises:
            GatewayError: unknown session, or a soft stop (code -32602).
        """
        _require_hard(stop)
        session = self._table.find(session_id)
        if session is None:  # live on another host, or nowhere
            return self.route_elsewhere(session_id, turn_id, StopKind.TURN).deliver(stop)
        if turn_id is not None:
            with session.lock:
                child = session.children.get(turn_id)
            if child is not None:
                return self.route(session, child).deliver(stop)
        running, _kept = self.book(session, stop, QueuePolicy.KEEP, turn_id, keyed_at)
        if running is not None:
            return running.turn_id
        if turn_id is not None:
            return None
        # Nothing of the session's own runs: what does run is the child agents that outlived
        # their turn (in the background). A stop of the session's work stops them.
        with session.lock:
            orphans = session.orphans()
        for child in orphans:
            self.route(session, child).deliver(stop)
        return orphans[0].turn_id if orphans else None

    def steer(self, session_id: str, steer: Steer) -> Turn | None:
        """``prompt.steer``: hand ``steer`` to the session's running prompt turn.

        Returns:
            the turn that took it, or None: nothing runs, a ``/compress`` runs (the turn after
            it gets the text as a prompt), or the turn had taken its last boundary.

        Raises:
            GatewayError: unknown session.
        """
        session = self._table.get(session_id)
        with session.lock:
            running = session.running
        if running is None or running.kind != TurnKind.PROMPT:
            return None
        route = self.route(session, running)
        assert isinstance(route, LocalTurn)
        return running if route.steer(steer) else None

    def queue_fate(self, turn_id: str) -> tuple[QueuePolicy, StopRequest] | None:
        """What a stop that dropped (or forgot) the queue did behind the turn ``turn_id``, once
        (the turn's worker asks when the turn ended); None when the queue was kept."""
        with self._unsent_lock:
            return self._fates.pop(turn_id, None)

    def drop_unsent(
        self,
        session: Session,
        behind: Turn,
        turns: list[Turn],
        stop: StopRequest,
        *,
        forget: bool = False,
    ) -> None:
        """Prompts ``stop`` keeps from running (steers the stopped turn never took), as it
        did the queue: shown as dropped now, and saved as not sent once ``behind`` is saved
        (unless ``forget``: a deletion)."""
        if not forget:
            with self._unsent_lock:
                _session, later = self._unsent.setdefault(behind.turn_id, (session, []))
                later.extend((turn, stop) for turn in turns)
        for turn in turns:
            turn.state = TurnStage.DONE
            dropped = PromptDropped(turn_id=turn.turn_id, text=turn.prompt, reason=stop.reason)
            self._publish(session, dropped)

    def cancel_compression(self, session_id: str, stop: StopRequest) -> bool:
        """``compression.cancel``: hard-stop the running compression, and only it.

        Before commit admission the compression is rolled back (after, the commit completes
        and nothing is stopped). A ``/compress`` turn is its compression: it ends, booked to
        ``stop``. A prompt turn that was compressing first goes on without the compression
        (:class:`~tui_gateway.turns.fitted_turns.FittedTurns` sends its request when it fits
        without it, and otherwise ends it with one line saying so); ``session.interrupt``
        stops the turn, compression included.

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
        if turn is None:
            return False
        compressor = turn.compressor
        if compressor is not None and compressor.fence.state != FenceState.OPEN:
            return False  # its commit was admitted: it completes
        if turn.kind == TurnKind.COMPRESS:  # its compressor may not be made yet: the turn is it
            return self.interrupt(session_id, stop, turn_id=turn.turn_id) is not None
        if compressor is None:
            return False
        compressor.interrupt(stop)  # the prompt turn goes on without it
        return True

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

    def frontend_gone(self, surface: Surface = Surface.API_DISCONNECT) -> int:
        """The frontend went away: stop every running turn and console command (system stop).

        Args:
            surface: the system surface the stop is booked with (``api.disconnect``, or
                ``acp.disconnect`` for an ACP client).

        Returns:
            how many turns and commands were stopped.

        Raises:
            ValueError: ``surface`` is a user surface.
        """
        stop = StopRequest.by_system(surface, "the frontend went away")
        stopped = sum(
            self.book(s, stop, QueuePolicy.DROP)[0] is not None for s in self._table.all()
        )
        return stopped + self._console.cancel_all(stop)

    def evict(self, session: Session) -> None:
        """Stop the session's work as ``session.evicted``, wait for it, then drop the session
        and give its claim back (another desk may open it now)."""
        stop = StopRequest.by_system(Surface.SESSION_EVICTED, "too many live sessions")
        self._stop_and_wait(session, stop, QueuePolicy.DROP)
        self._publish(session, SessionEvicted(reason=stop.reason))
        self._table.remove(session.session_id)
        self._persistence.released(session)

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
        """After the shutdown bound: book the outcome of every turn and child agent whose worker
        is still running (so it is never left open), with the reply it had streamed as its
        partial reply, then save every prompt dropped behind one."""
        for session in sessions:
            with session.lock:
                running = session.running
                children = session.live_children()
            if running is not None and not running.done.is_set():
                shown = self._persistence.draft_text(running.turn_id)
                booked = self.settle(session, running, _stopped_result(stop, ABANDONED, shown))
                self._persistence.turn_ended(session, running, booked)
            for child in children:
                if child.done.is_set():
                    continue
                booked = self.settle(session, child, _stopped_result(stop, ABANDONED))
                self._persistence.child_ended(session, child, booked)
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
        """Book ``result`` as the turn's outcome unless one is booked already; its usage is
        added to the session's (what the worker's requests cost counts either way).

        Returns:
            the booked outcome (``result``, or the one booked first).
        """
        with session.lock:
            session.usage = session.usage.plus(result.usage_total)
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
            session.history.extend(
                ChatMessage(role="user", content=t.prompt, unsent=True) for t, _ in dropped
            )
        self._persistence.prompts_unsent(session, dropped)

    # -- inside --------------------------------------------------------------------------------

    def _stop_and_wait(self, session: Session, stop: StopRequest, queue: QueuePolicy) -> None:
        with session.lock:
            children = session.live_children()
        running, _dropped = self.book(session, stop, queue)
        deadline = time.monotonic() + self._wait_s
        for turn in ([running] if running is not None else []) + children:
            turn.done.wait(max(0.0, deadline - time.monotonic()))


def _require_hard(stop: StopRequest) -> None:
    if not stop.hard:
        raise GatewayError(SOFT_IS_A_STEER, code=-32602)


def _stopped_result(stop: StopRequest, error: str, shown: str = "") -> TurnResult:
    """The outcome booked for a turn ``stop`` ended without a result from its worker; the
    text it had streamed (``shown``) is kept as its partial reply."""
    reply = [ChatMessage(role="assistant", content=shown)] if shown else []
    return TurnResult(
        status=TurnStatus.INTERRUPTED,
        exit_reason=stop.exit_reason(),
        text=shown,
        messages=reply,
        partial=True,
        stop=stop,
        error=error,
    )


__all__ = [
    "ABANDONED",
    "BookingOffice",
    "ConsoleCommand",
    "LocalChild",
    "LocalTurn",
    "Publish",
    "QueuePolicy",
    "Route",
    "receipt",
]
