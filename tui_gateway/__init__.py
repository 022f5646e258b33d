"""The gateway: sessions, turn runner, stop intents and shutdown, behind one contract.

The desk (or any other frontend) calls the gateway's methods and receives typed events; it never
touches an :class:`agent.agent.Agent` directly.
"""

from tui_gateway.events import GatewayEvent
from tui_gateway.gateway import Gateway, GatewayConfig, ShutdownReport

__all__ = ["Gateway", "GatewayConfig", "GatewayEvent", "ShutdownReport"]
