"""The gateway's start and end on the wire: ``gateway.ready``, and ``gateway.shutdown`` (its params
and declaration)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from contract.methods.declare import Method
from contract.results import ShutdownReport


@dataclass(frozen=True, slots=True)
class Ready:
    """Params of the ``gateway.ready`` notification, the first line a stdio gateway writes.

    Attributes:
        protocol_version: this contract's version; a client refuses a version it does not speak.
        model: the model new sessions talk to.
        base_url: the model server's OpenAI base URL.
        demo: true when the gateway runs the built-in demo model.
        replay_capacity: events kept per session for ``session.events.since``.
        pid: the gateway's process id.
    """

    protocol_version: int
    model: str
    base_url: str
    demo: bool
    replay_capacity: int
    pid: int


@dataclass(frozen=True, slots=True)
class GatewayShutdownParams:
    """Params of ``gateway.shutdown``.

    Attributes:
        timeout_s: how long to wait for the workers, in seconds (null: the gateway's bound).
    """

    timeout_s: float | None = None

    def __post_init__(self) -> None:
        if self.timeout_s is not None and not 0 <= self.timeout_s <= 600:
            raise ValueError("timeout_s must be 0..600 seconds")


# -- the methods: name, params, result, what it does, and the call into the gateway --

GATEWAY_SHUTDOWN = Method(
    "gateway.shutdown",
    GatewayShutdownParams,
    ShutdownReport,
    "A system stop of everything (`gateway.shutdown`): queued prompts dropped, running turns "
    "and console commands hard-stopped, then a bounded wait for every worker. A stdio gateway "
    "exits after answering.",
    lambda g, p: g.shutdown(p.timeout_s),
    blocking=True,
)

METHODS: tuple[Method[Any, Any], ...] = (GATEWAY_SHUTDOWN,)
"""This group's methods, in the order the reference lists them."""
