"""Stop requests and exit reasons: who stopped a turn, from where, and how it ended.

A :class:`StopRequest` is one immutable value carried end to end, from the key press or the
shutdown path to the turn row. It has no default issuer: every producer states one.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from enum import StrEnum

from agent.outcome import ExitReason


class Issuer(StrEnum):
    """The party a stop is booked to."""

    USER = "user"
    SYSTEM = "system"


class Surface(StrEnum):
    """Where a stop came from (the glossary's surfaces)."""

    DESK_KEY = "desk.key"
    DESK_BUTTON = "desk.button"
    CONSOLE_CANCEL = "console.cancel"
    CONSOLE_STOP = "console.stop"
    SESSION_DELETE = "session.delete"
    HEADLESS_SIGINT = "headless.sigint"
    CONSOLE_TIMEOUT = "console.timeout"
    API_STOP = "api.stop"
    API_DISCONNECT = "api.disconnect"
    GATEWAY_SHUTDOWN = "gateway.shutdown"
    SESSION_EVICTED = "session.evicted"
    INACTIVITY = "inactivity"


USER_SURFACES: frozenset[Surface] = frozenset(
    {
        Surface.DESK_KEY,
        Surface.DESK_BUTTON,
        Surface.CONSOLE_CANCEL,
        Surface.CONSOLE_STOP,
        Surface.SESSION_DELETE,
        Surface.HEADLESS_SIGINT,
        Surface.API_STOP,
    }
)
"""Surfaces that only a person can trigger; every other surface is a system surface."""


@dataclass(frozen=True, slots=True)
class StopRequest:
    """An intent to stop work, carried unchanged from its producer to the turn's booking.

    Attributes:
        issuer: ``user`` or ``system``; there is no default.
        surface: who asked (a :class:`Surface`).
        reason: short human text, shown in the stop receipt.
        hard: True for a hard cancel (aborts everything, compression included, before commit).
            False asks for a soft interrupt ("consider this", delivered at the turn's next
            model call), which is not built yet: everything that takes a stop refuses a soft
            one with ``ValueError`` (the gateway with a ``GatewayError``), none ignores it.
        requested_at: ``time.monotonic()`` seconds when the stop was made.

    Raises:
        ValueError: if the issuer does not match the surface (a user surface booked as the
            system or the reverse), so a stop can never be booked to the wrong party.
    """

    issuer: Issuer
    surface: Surface
    reason: str
    hard: bool = True
    requested_at: float = field(default_factory=time.monotonic, compare=False)

    def __post_init__(self) -> None:
        expected = Issuer.USER if self.surface in USER_SURFACES else Issuer.SYSTEM
        if Issuer(self.issuer) is not expected:
            raise ValueError(
                f"surface {self.surface.value!r} is a {expected.value} surface, "
                f"not {Issuer(self.issuer).value}"
            )

    @classmethod
    def by_user(cls, surface: Surface, reason: str = "stopped by you") -> StopRequest:
        """A hard stop booked to the person, from a user surface."""
        return cls(issuer=Issuer.USER, surface=surface, reason=reason)

    @classmethod
    def by_system(cls, surface: Surface, reason: str) -> StopRequest:
        """A hard stop booked to the system, from a system surface."""
        return cls(issuer=Issuer.SYSTEM, surface=surface, reason=reason)

    def exit_reason(self) -> ExitReason:
        """The exit reason a turn ended by this stop gets.

        Returns:
            ``interrupted_by_user`` for a user stop, else ``interrupted_by_system(<surface>)``.
        """
        if self.issuer is Issuer.USER:
            return ExitReason.interrupted_by_user()
        return ExitReason.interrupted_by_system(self.surface.value)

    def describe(self) -> str:
        """One line naming who stopped the work, e.g. ``stopped by the system: quitting``."""
        if self.issuer is Issuer.USER:
            return "stopped by the user"
        return f"stopped by the system: {self.reason}"

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready view: ``{issuer, surface, reason, hard}``."""
        return {
            "issuer": self.issuer.value,
            "surface": self.surface.value,
            "reason": self.reason,
            "hard": self.hard,
        }


SOFT_NOT_SUPPORTED = "soft interrupts are not supported yet: only hard stops are delivered"
"""The one-line refusal of a soft stop (``hard=False``) until steering delivers them."""


def require_hard(stop: StopRequest) -> None:
    """Refuse a soft stop: nothing that takes a stop may silently ignore one.

    Raises:
        ValueError: when ``stop.hard`` is False (message :data:`SOFT_NOT_SUPPORTED`).
    """
    if not stop.hard:
        raise ValueError(SOFT_NOT_SUPPORTED)
