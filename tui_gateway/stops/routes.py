"""The routes of the booking office: what a stop reaches, one small class per kind.

:class:`~tui_gateway.stops.booking.BookingOffice` picks the route of a stop (its ``route`` method);
each route delivers the stop to what it stops and says what it stopped:

- :class:`LocalTurn`: a turn on this gateway's worker: the compression inside it first, then
  its agent (whose scope reaches every child agent the turn started);
- :class:`LocalChild`: one child agent alone (its own children with it), not its parent;
- :class:`ConsoleCommand`: a console command, queued or running.

:func:`receipt` is the stop receipt of a turn's booked outcome.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from agent.steering import Steer
from agent.stops import StopRequest
from contract.events import Payload, StopReceipt, TurnState
from contract.kinds import TurnActivity
from tui_gateway.console import Console
from tui_gateway.sessions.state import Session, Turn

Publish = Callable[[Session | None, Payload], None]
"""Sends a payload for a session (None: gateway-wide); never blocks."""


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

    def steer(self, steer: Steer) -> bool:
        """Hand a steer to the turn's agent; False when the turn cannot take it any more."""
        return self.turn.agent.steer(steer)


@dataclass(frozen=True, slots=True)
class LocalChild:
    """One child agent, stopped alone: its scope is cancelled (its agent and its own children
    stop), its parent is not; the parent gets the child's outcome and goes on."""

    session: Session
    turn: Turn
    publish: Publish

    def deliver(self, stop: StopRequest) -> str | None:
        """Stop the child; returns its id, or None when it had ended."""
        link = self.turn.child
        if link is None or self.turn.done.is_set():
            return None
        link.scope.cancel(stop)
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
    tool = result.stopped_tool
    return StopReceipt(
        issuer=stop.issuer.value,
        surface=stop.surface.value,
        reason=stop.reason,
        closed_ms=timings.stop_to_closed_ms if timings is not None else None,
        exited_ms=turn.exited_ms(stop),
        children_ended=result.children_ended,
        tool=tool.name if tool is not None else None,
        tool_pid=tool.pid if tool is not None else None,
        tool_ended_ms=tool.ended_ms if tool is not None else None,
        usage=result.usage_total if result.usage_total.requests or result.iterations else None,
    )


__all__ = ["ConsoleCommand", "LocalChild", "LocalTurn", "Publish", "Route", "receipt"]
