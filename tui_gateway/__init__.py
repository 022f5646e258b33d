"""The gateway: sessions, turn runner, stop intents and shutdown, behind one contract.

The desk (or any other frontend) calls the gateway's methods and receives typed events (the
:mod:`contract` package); it never touches an :class:`agent.agent.Agent` directly.

This face is light: importing ``tui_gateway`` (or any of its modules) loads no engine; the names
below are imported on first use (``tui_gateway.Gateway`` loads the gateway then). Type checkers
read ``__init__.pyi``.
"""

from __future__ import annotations

import importlib
from typing import Any

_HOMES = {
    "Gateway": "tui_gateway.gateway",
    "GatewayConfig": "tui_gateway.engine_setup",
    "GatewayEvent": "contract.envelope",
    "ShutdownReport": "contract.results",
}
"""Public name -> the module that defines it."""

__all__ = ["Gateway", "GatewayConfig", "GatewayEvent", "ShutdownReport"]


def __getattr__(name: str) -> Any:
    """Import ``name`` from its module on first use.

    Raises:
        AttributeError: ``name`` is not one of this package's public names.
    """
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
