"""The ``stop`` object: who stops, from where, and why, in every params that carry a stop.

``session.interrupt``, ``compression.cancel`` and ``console.cancel`` each take one
``stop: {issuer, surface, reason}`` member (:class:`StopParams`). It is decoded strictly like
every params object and checked once, here, by building the :class:`agent.stops.StopRequest` it
states: an issuer that does not match the surface, or an empty reason, is an invalid-params
error (``-32602``) and the request changes nothing.

A stop on the wire is always a hard stop. A soft interrupt ("consider this") is not a stop and
will be a method of its own (``prompt.steer``).
"""

from __future__ import annotations

from dataclasses import dataclass

from agent.stops import Issuer, StopRequest, Surface


@dataclass(frozen=True, slots=True)
class StopParams:
    """Who stops the work, from where, and why (a hard stop).

    Attributes:
        issuer: ``user`` or ``system``; it must match the surface (see Stop surfaces).
        surface: where the stop comes from.
        reason: short human text, shown in the stop receipt (not empty).

    Raises:
        ValueError: the issuer does not match the surface, or the reason is empty.
    """

    issuer: Issuer
    surface: Surface
    reason: str

    def __post_init__(self) -> None:
        self.request()

    def request(self) -> StopRequest:
        """The :class:`StopRequest` these params state (made now: its ``requested_at`` is now).

        Raises:
            ValueError: the issuer does not match the surface, or the reason is empty.
        """
        if not self.reason.strip():
            raise ValueError("reason must not be empty: say why the work is stopped")
        return StopRequest(
            issuer=Issuer(self.issuer), surface=Surface(self.surface), reason=self.reason
        )

    @classmethod
    def of(cls, stop: StopRequest) -> StopParams:
        """The wire form of ``stop``.

        Raises:
            ValueError: ``stop`` is a soft interrupt (``hard=False``), which is not a stop, or
                its reason is empty.
        """
        if not stop.hard:
            raise ValueError("a soft interrupt is not a stop: the wire carries hard stops only")
        return cls(issuer=stop.issuer, surface=stop.surface, reason=stop.reason)
