"""The ``stop`` object: who stops, from where, and why, in every params that carry a stop.

``session.interrupt``, ``compression.cancel`` and ``console.cancel`` each take one
``stop: {issuer, surface, reason}`` member (:class:`StopParams`). It is decoded strictly like
every params object and checked once, here, by building the :class:`agent.stops.StopRequest` it
states: an issuer that does not match the surface, or an empty reason, is an invalid-params
error (``-32602``) and the request changes nothing.

The object never says ``hard``: the method does. It is a hard stop everywhere but in
``prompt.steer``, where the same object states who steers (a soft interrupt, carried beside the
steer's text).
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

    def request(self, *, hard: bool = True) -> StopRequest:
        """The :class:`StopRequest` these params state (made now: its ``requested_at`` is now).

        Args:
            hard: False for ``prompt.steer``'s soft interrupt.

        Raises:
            ValueError: the issuer does not match the surface, or the reason is empty.
        """
        if not self.reason.strip():
            raise ValueError("reason must not be empty: say why the work is stopped")
        return StopRequest(
            issuer=Issuer(self.issuer),
            surface=Surface(self.surface),
            reason=self.reason,
            hard=hard,
        )

    @classmethod
    def of(cls, stop: StopRequest, *, soft: bool = False) -> StopParams:
        """The wire form of ``stop``.

        Args:
            stop: the stop.
            soft: it goes to ``prompt.steer``, which takes a soft interrupt only.

        Raises:
            ValueError: ``stop`` is soft where a hard stop is carried (a soft interrupt is a
                steer: ``prompt.steer``), hard where a steer is, or its reason is empty.
        """
        if stop.hard == soft:
            raise ValueError(
                "a hard stop is not a steer"
                if soft
                else "a soft interrupt is a steer: "
                "the stop methods carry hard stops only (send text with prompt.steer)"
            )
        return cls(issuer=stop.issuer, surface=stop.surface, reason=stop.reason)
