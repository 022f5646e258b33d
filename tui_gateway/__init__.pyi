"""Type checkers read this; at run time the face imports each name on first use."""

from __future__ import annotations

from contract.envelope import (
    GatewayEvent,
)
from contract.results import (
    ShutdownReport,
)
from tui_gateway.engine_setup import (
    GatewayConfig,
)
from tui_gateway.gateway import (
    Gateway,
)

__all__ = [
    "Gateway",
    "GatewayConfig",
    "GatewayEvent",
    "ShutdownReport",
]
