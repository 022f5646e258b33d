"""Gateway events no session view took: where each goes.

The bridge (:mod:`desk.bridge`) posts an event to the view of its session when that session is
on screen; what is left reaches the app: console events (of any session), ``gateway.stopping``,
``mcp.server``, ``server.status``, and the notices and context counts of sessions not shown.
Other events of sessions not shown change nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from contract.events import (
    ConsoleComplete,
    ConsoleOutput,
    ContextWindowKnown,
    GatewayStopping,
    SessionEvicted,
    StoreFailed,
    StoreWaiting,
)
from contract.mcp_events import McpServerChanged
from contract.server_events import ServerStatus

if TYPE_CHECKING:
    from desk.controllers import DeskControllers
    from desk.messages import GatewayMessage


async def route_unshown(c: DeskControllers, message: GatewayMessage) -> None:
    """Hand one event no view took to the controller of its concern (on the UI thread).

    Args:
        c: the desk's controllers.
        message: the event, with the session it belongs to.
    """
    match message.payload:
        case ConsoleOutput() as output:
            c.console.output(output)
        case ConsoleComplete() as ended:
            await c.console.ended(c.sessions.view, ended)
        case GatewayStopping() as stopping:
            c.quit.gateway_stopping(stopping.turns)
        case SessionEvicted() as evicted:
            await c.sessions.background_evicted(evicted)
        case StoreFailed() as failed:
            c.sessions.background_store_failed(message.session_id, failed)
        case StoreWaiting() as waiting:
            c.sessions.store_waiting(message.session_id, waiting)
        case ContextWindowKnown() as window:
            c.gauge.window_unshown(message.session_id, window, c.sessions.view)
        case McpServerChanged() as changed:
            await c.mcp.changed(changed)
            c.quit.servers_changed()
        case ServerStatus() as status:
            await c.server.changed(status)
