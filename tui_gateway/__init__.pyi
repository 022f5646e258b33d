"""Type checkers read this; at run time the face imports each name on first use."""

from __future__ import annotations

from tui_gateway.events import (
    GatewayEvent,
)
from tui_gateway.gateway import (
    Gateway,
    GatewayConfig,
    ShutdownReport,
)

__all__ = [
    "Gateway",
    "GatewayConfig",
    "GatewayEvent",
    "ShutdownReport",
]
