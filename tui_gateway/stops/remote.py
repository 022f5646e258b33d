"""Turns that run on another gateway host: the route a stop takes to them, and the stops that
other hosts send to this one.

Several gateways may share one store (PostgreSQL, a :class:`~agent.store.SharedStore`); a
session is live on one of them at a time. When ``session.interrupt`` or ``compression.cancel``
names a session that is not live here, the booking office asks :meth:`RemoteStops.route` where
its turn runs: a turn owned by another host is a :class:`RemoteTurn`, one more
:class:`~tui_gateway.stops.booking.Route`, whose :meth:`~RemoteTurn.deliver` writes a durable stop
row addressed to that host and notifies it (:class:`~agent.store.StopMail`). That host's
listener (:meth:`RemoteStops.listen`) turns each row back into the
:class:`~agent.stops.StopRequest` the sender made (same issuer, surface and reason, and a
``requested_at`` moved back by the time the row waited, so the receipt counts it) and hands it
to its own booking office, which stops the turn and books the outcome once, as for a stop
asked there.

A ``/compress`` is no turn of the store (it saves no turn row): while one runs on another host,
the session has no open turn, and its compression lease (``<owner>/<attempt>``, unexpired)
names the host instead; before it took its lease, the session's claim (the running host that
holds it live) does. The stop goes there addressed to "whatever runs" (no turn id, unless
the asker named the ``/compress`` turn), and that host stops its compression as it would for
a stop asked there.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from agent.stops import Issuer, StopRequest, Surface
from agent.store import Leases, RunningTurn, StopKind, StopLetter, StopMail, StoreError
from agent.store.liveness import holder_owner
from contract.errors import GatewayError

_log = logging.getLogger(__name__)


class Office(Protocol):
    """What books the stops other hosts send (the gateway's booking office)."""

    def interrupt(
        self, session_id: str, stop: StopRequest, turn_id: str | None = None
    ) -> str | None:
        """Hard-stop the session's running turn (only ``turn_id``, when given)."""
        ...

    def cancel_compression(self, session_id: str, stop: StopRequest) -> bool:
        """Hard-stop the session's running compression."""
        ...


@dataclass(frozen=True, slots=True)
class RemoteTurn:
    """A turn running on another host (a :class:`~tui_gateway.stops.booking.Route`).

    Attributes:
        mail: the store's stop mail.
        running: the turn and its owner.
        kind: what to stop (the turn, or only its compression).
    """

    mail: StopMail
    running: RunningTurn
    kind: StopKind

    def deliver(self, stop: StopRequest) -> str:
        """Send ``stop`` to the turn's host; returns the turn's id.

        Raises:
            GatewayError: the stop row could not be written (nothing was sent).
        """
        try:
            self.mail.send(
                self.running,
                self.kind,
                issuer=stop.issuer.value,
                surface=stop.surface.value,
                reason=stop.reason,
            )
        except StoreError as exc:
            raise GatewayError(f"cannot send the stop: {exc.message}") from exc
        return self.running.turn_id


def stop_of(letter: StopLetter) -> StopRequest:
    """The :class:`StopRequest` another host sent as ``letter``.

    Raises:
        ValueError: an issuer or surface this desk does not know, or a pair that does not
            match (a user surface booked as the system).
    """
    return StopRequest(
        issuer=Issuer(letter.issuer),
        surface=Surface(letter.surface),
        reason=letter.reason,
        requested_at=time.monotonic() - letter.age_s,
    )


class RemoteStops:
    """Stops between this gateway and the other hosts of its store.

    Args:
        mail: the store's stop mail.
        owner: this host's owner string (a turn it owns is never remote).
        leases: the store's compression leases (a ``/compress`` running on another host is
            found by its lease); None finds only turns.
        clock: unix seconds now, on the clock the leases' expiries are written with.
    """

    def __init__(
        self,
        mail: StopMail,
        owner: str,
        leases: Leases | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._mail = mail
        self._owner = owner
        self._leases = leases
        self._clock = clock

    def route(self, session_id: str, turn_id: str | None, kind: StopKind) -> RemoteTurn | None:
        """The route to the session's turn when another host runs it, or to the ``/compress``
        another host runs (found by its unexpired compression lease), or None.

        Raises:
            GatewayError: the store cannot be read.
        """
        try:
            running = self._mail.running_turn(session_id, turn_id)
            if running is None:
                running = self._compressing(session_id, turn_id)
            if running is None:  # a /compress before it took its lease: the session's host
                running = self._live_elsewhere(session_id, turn_id)
        except StoreError as exc:
            raise GatewayError(exc.message) from exc
        if running is None or running.owner == self._owner:
            return None
        return RemoteTurn(self._mail, running, kind)

    def _live_elsewhere(self, session_id: str, turn_id: str | None) -> RunningTurn | None:
        """The running host that holds the session live, as the turn it runs (``turn_id``,
        or "" for "whatever runs"): a ``/compress`` that started there has neither a turn row
        nor, for its first moments, a lease. None for no such session.

        Raises:
            StoreError: the store cannot be read.
            GatewayError: the session is live on no running host: nothing runs to stop
                (code -32602).
        """
        owner = self._mail.live_owner(session_id)
        if owner is None:
            return None
        if not owner:
            raise GatewayError(
                f"nothing to stop in session {session_id!r}: it is live on no running desk",
                code=-32602,
            )
        return RunningTurn(turn_id or "", session_id, owner)

    def _compressing(self, session_id: str, turn_id: str | None) -> RunningTurn | None:
        """The ``/compress`` of a session that has no open turn, as the turn of the host whose
        unexpired lease runs it (its id is ``turn_id``, or "" for "whatever runs"), or None.

        Raises:
            StoreError: the store cannot be read.
        """
        lease = self._leases.get_lease(session_id) if self._leases is not None else None
        if lease is None or lease.expires_at <= self._clock():
            return None
        owner = holder_owner(lease.holder)
        return None if owner is None else RunningTurn(turn_id or "", session_id, owner)

    def listen(self, office: Office) -> None:
        """Book every stop other hosts send here with ``office`` (on the store's listener
        thread): a turn's with its ``interrupt``, a compression's with its
        ``cancel_compression``."""

        def deliver(letters: list[StopLetter]) -> None:
            for letter in letters:
                try:
                    stop = stop_of(letter)
                except ValueError as exc:
                    _log.warning("a stop from %s is not understood: %s", letter.sent_by, exc)
                    continue
                try:
                    if letter.kind is StopKind.TURN:
                        office.interrupt(letter.session_id, stop, letter.turn_id)
                    else:
                        office.cancel_compression(letter.session_id, stop)
                except GatewayError:
                    continue  # the session is not live here any more: nothing runs to stop

        self._mail.listen(deliver)
