"""The gateway: sessions, turn runner, stop intents and shutdown, behind one contract.

The desk (or any other frontend) calls the gateway's methods and receives typed events; it never
touches an :class:`agent.agent.Agent` directly.
"""

from __future__ import annotations

from agent.faces import lazy_names

__all__, __getattr__ = lazy_names(
    __name__,
    {
        "Gateway": "tui_gateway.gateway",
        "GatewayConfig": "tui_gateway.gateway",
        "GatewayEvent": "tui_gateway.events",
        "ShutdownReport": "tui_gateway.gateway",
    },
)
