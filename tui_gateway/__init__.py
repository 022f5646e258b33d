"""The gateway: sessions, turn runner, stop intents and shutdown, behind one contract.

The desk (or any other frontend) calls the gateway's methods and receives typed events (the
:mod:`contract` package); it never touches an :class:`agent.agent.Agent` directly.

This face is light: importing ``tui_gateway`` (or any of its modules) loads no engine; the names
below are imported on first use (``tui_gateway.Gateway`` loads the gateway then). Type checkers
read ``__init__.pyi``.
"""

from __future__ import annotations

from agent.faces import lazy_names

__all__, __getattr__ = lazy_names(
    __name__,
    {
        "Gateway": "tui_gateway.gateway",
        "GatewayConfig": "tui_gateway.engine_setup",
        "GatewayEvent": "contract.envelope",
        "ShutdownReport": "contract.results",
    },
)
