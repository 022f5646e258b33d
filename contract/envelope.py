"""The envelope of every gateway event, the base of every payload, and the stop receipt.

:class:`GatewayEvent` carries a payload with its session and per-session ``seq``; every payload
class (:mod:`contract.events`, :mod:`contract.steer_events`) derives from :class:`Payload`;
:class:`StopReceipt` is part of several payloads.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

from agent.usage import TokenUsage

PROTOCOL_VERSION = 2
"""Version of the wire contract (methods, params, results and event payload shapes); bumped on
any incompatible change. 2: a stop's params are one nested ``stop`` object, without ``hard``."""


def _listed(items: list[tuple[str, Any]]) -> dict[str, Any]:
    """``asdict``'s dict factory that makes JSON arrays of tuples."""
    return {key: list(value) if isinstance(value, tuple) else value for key, value in items}


@dataclass(frozen=True, slots=True)
class Payload:
    """Base of every event payload; ``TYPE`` is the event's wire name."""

    TYPE: ClassVar[str] = ""
    CONTROL: ClassVar[bool] = True
    """Control events are never coalesced or dropped."""

    def to_wire(self) -> dict[str, Any]:
        """The payload as JSON-ready data (tuples as lists), with its ``version``."""
        data: dict[str, Any] = asdict(self, dict_factory=_listed)
        data["version"] = PROTOCOL_VERSION
        return data

    def merged(self, later: Payload) -> Payload | None:
        """This payload and the ``later`` one as one, when they can be coalesced; else None."""
        return None


@dataclass(frozen=True, slots=True)
class StopReceipt:
    """What a stop cost, from the gateway's own measurements.

    Attributes:
        issuer: ``user`` or ``system``.
        surface: where the stop came from (``desk.key``, ``gateway.shutdown``...).
        reason: short human text.
        closed_ms: milliseconds from the stop to the provider connection being closed; None
            when no request was open (a stop during a tool).
        exited_ms: milliseconds from the stop to the turn's worker having exited.
        children_ended: child processes of the turn that were ended.
        tool: the tool call the stop ended, when one ran (then ``closed_ms`` is None).
        tool_pid: the process (group) that tool call ran, if it ran one.
        tool_ended_ms: milliseconds from the stop to that process group being gone.
        rolled_back_ms: for a compression cancel, milliseconds from the stop to the attempt
            being rolled back and its lease released.
        usage: the stopped turn's model requests summed, where known (a request cut short
            counts desk's estimate, said in ``estimated_requests``; none at all, 0 requests,
            when the server refused every request the turn made, e.g. a 503 whose retry the
            stop cut short); None when the turn asked the model nothing.
    """

    issuer: str
    surface: str
    reason: str
    closed_ms: float | None
    exited_ms: float | None
    children_ended: int = 0
    tool: str | None = None
    tool_pid: int | None = None
    tool_ended_ms: float | None = None
    rolled_back_ms: float | None = None
    usage: TokenUsage | None = None


@dataclass(frozen=True, slots=True)
class GatewayEvent:
    """The envelope of every event.

    Attributes:
        type: the payload's wire name (``message.delta``...).
        session_id: the session it belongs to ("" for gateway-wide events).
        seq: per-session monotonic sequence number (gaps mean coalesced deltas).
        payload: the typed payload.
    """

    type: str
    session_id: str
    seq: int
    payload: Payload = field(compare=False)

    @property
    def control(self) -> bool:
        """True when this event may never be coalesced or dropped."""
        return self.payload.CONTROL

    def to_wire(self) -> dict[str, Any]:
        """The JSON-RPC notification ``{"method": "event", "params": {...}}``."""
        return {
            "jsonrpc": "2.0",
            "method": "event",
            "params": {
                "type": self.type,
                "session_id": self.session_id,
                "seq": self.seq,
                "payload": self.payload.to_wire(),
            },
        }
