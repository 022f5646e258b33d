"""Stop requests and exit reasons: who stopped a turn, from where, and how it ended.

A :class:`StopRequest` is one immutable value carried end to end, from the key press or the
shutdown path to the turn row. It has no default issuer: every producer states one.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from enum import StrEnum

from agent.outcome import ExitReason

USER_STOPPED = "stopped by the user"
"""Who stopped the work, in words, for a user stop (:meth:`StopRequest.describe`): what the
model reads in a tool result a stop cut, and what the store keeps."""

SYSTEM_STOPPED = "stopped by the system"
"""The same for a system stop (``stopped by the system: <reason>``)."""

YOU_STOPPED = "stopped by you"
"""A user stop as the person reads it on their own screen (a user stop's default reason; a
frontend shows :data:`USER_STOPPED` this way, live or resumed)."""


class Issuer(StrEnum):
    """The party a stop is booked to."""

    USER = "user"
    SYSTEM = "system"


class Surface(StrEnum):
    """Where a stop came from (the glossary's surfaces)."""

    DESK_KEY = "desk.key"
    DESK_BUTTON = "desk.button"
    DESK_COMMAND = "desk.command"
    CONSOLE_CANCEL = "console.cancel"
    CONSOLE_STOP = "console.stop"
    SESSION_DELETE = "session.delete"
    HEADLESS_SIGINT = "headless.sigint"
    CONSOLE_TIMEOUT = "console.timeout"
    API_STOP = "api.stop"
    API_STEER = "api.steer"
    API_DISCONNECT = "api.disconnect"
    GATEWAY_SHUTDOWN = "gateway.shutdown"
    SESSION_EVICTED = "session.evicted"
    INACTIVITY = "inactivity"
    DELEGATE_RESULT = "delegate.result"
    ACP_CANCEL = "acp.cancel"
    ACP_DISCONNECT = "acp.disconnect"
    SCHEDULE_TIMEOUT = "schedule.timeout"
    WEB_DISCONNECT = "web.disconnect"


USER_SURFACES: frozenset[Surface] = frozenset(
    {
        Surface.DESK_KEY,
        Surface.DESK_BUTTON,
        Surface.DESK_COMMAND,
        Surface.CONSOLE_CANCEL,
        Surface.CONSOLE_STOP,
        Surface.SESSION_DELETE,
        Surface.HEADLESS_SIGINT,
        Surface.API_STOP,
        Surface.API_STEER,
        Surface.ACP_CANCEL,
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
            False is a soft interrupt, a steer: "consider this", delivered to the running turn
            at its next model-call boundary, never cutting a stream, a tool or a compression.
            A soft stop travels with its text in an :class:`agent.steering.Steer`; everything
            that only stops (``Agent.interrupt``, ``InterruptScope.cancel``,
            ``Compressor.interrupt``, the gateway's stop methods) refuses one with
            ``ValueError`` (the gateway with a ``GatewayError``), none ignores it.
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
    def by_user(cls, surface: Surface, reason: str = YOU_STOPPED) -> StopRequest:
        """A hard stop booked to the person, from a user surface."""
        return cls(issuer=Issuer.USER, surface=surface, reason=reason)

    @classmethod
    def by_system(cls, surface: Surface, reason: str) -> StopRequest:
        """A hard stop booked to the system, from a system surface."""
        return cls(issuer=Issuer.SYSTEM, surface=surface, reason=reason)

    @classmethod
    def soft(cls, surface: Surface, reason: str) -> StopRequest:
        """A soft interrupt (a steer) from ``surface``, booked to the party the surface belongs
        to (the person for a user surface, else the system)."""
        issuer = Issuer.USER if surface in USER_SURFACES else Issuer.SYSTEM
        return cls(issuer=issuer, surface=surface, reason=reason, hard=False)

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
            return USER_STOPPED
        return f"{SYSTEM_STOPPED}: {self.reason}"

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready view: ``{issuer, surface, reason, hard}``."""
        return {
            "issuer": self.issuer.value,
            "surface": self.surface.value,
            "reason": self.reason,
            "hard": self.hard,
        }


SOFT_IS_A_STEER = (
    "a soft interrupt is a steer: it carries text and is delivered with Agent.steer "
    "(prompt.steer on the wire); only hard stops are taken here"
)
"""The one-line refusal of a soft stop (``hard=False``) by what only stops."""

HARD_IS_NOT_A_STEER = "a steer is a soft interrupt (hard=False); a hard stop goes to interrupt"
"""The one-line refusal of a hard stop where a steer is expected."""


def require_hard(stop: StopRequest) -> None:
    """Refuse a soft stop where only a hard stop makes sense: none is silently ignored.

    Raises:
        ValueError: when ``stop.hard`` is False (message :data:`SOFT_IS_A_STEER`).
    """
    if not stop.hard:
        raise ValueError(SOFT_IS_A_STEER)


def require_soft(stop: StopRequest) -> None:
    """Refuse a hard stop where a steer (a soft interrupt) is expected.

    Raises:
        ValueError: when ``stop.hard`` is True (message :data:`HARD_IS_NOT_A_STEER`).
    """
    if stop.hard:
        raise ValueError(HARD_IS_NOT_A_STEER)
