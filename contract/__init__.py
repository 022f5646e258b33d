"""The gateway contract: what a frontend needs to talk to a gateway, and nothing else.

Every frontend (the desk, the stdio and HTTP wire, ACP, the browser) imports this package; it
imports nothing of :mod:`tui_gateway` and of the agent only its vocabulary (stops, outcomes,
statuses, usage), so importing it loads no engine. Its modules, one job each:

- payloads: :mod:`~.envelope` (the event envelope, the payload base, the stop receipt),
  :mod:`~.events`, :mod:`~.steer_events`, :mod:`~.server_events`, :mod:`~.mcp_events` (one typed,
  versioned payload per event type), :mod:`~.kinds` (their closed words);
- :mod:`~.results` (what the methods return), :mod:`~.errors` (error codes and
  :class:`GatewayError`), :mod:`~.limits` (sizes);
- :mod:`~.methods`: one declaration per method (name, params, result, what it does, the call
  into the gateway), by group, each group module holding its params and results;
  :mod:`~.methods.stop` is the ``stop`` object a stop carries;
- :mod:`~.ports` (the gateway as a frontend sees it, a Protocol), :mod:`~.subscription` (one
  subscriber's delivery thread), :mod:`~.text` (terminal-safe text, the token estimate);
- :mod:`~.routes` (``desk serve``'s HTTP routes), :mod:`~.run` (the lines of ``desk run --json``).

The dispatcher (:mod:`tui_gateway.wire.dispatch`) and the remote client
(:class:`tui_gateway.wire.client.RemoteGateway`) are derived from the declarations, and the
reference ``docs/protocol.md`` and ``docs/protocol.schema.json`` are generated from them (a test
fails when they drift apart). Every method's params and result are typed dataclasses, decoded
strictly (an unknown or mistyped member is an invalid-params error, ``-32602``). A stop always
states who asks: ``session.interrupt``, ``compression.cancel`` and ``console.cancel`` carry one
``stop: {issuer, surface, reason}`` object (:class:`StopParams`), refused when the issuer does
not match the surface.

This face is light: it names the wire's names (``import contract as c``; ``c.METHODS``) and
imports each from its module on first use (type checkers read ``__init__.pyi``), so importing
one module of the contract loads that module's imports only. A new method's params and result
are read from its group module (``contract.methods.turns``...), not from here.
"""

from __future__ import annotations

import importlib
from typing import Any

_HOMES: dict[str, str] = {
    "ApprovalRespondParams": "contract.methods.turns",
    "ApprovalRespondResult": "contract.methods.turns",
    "CompressionCancelParams": "contract.methods.turns",
    "CompressionCancelResult": "contract.methods.turns",
    "ConsoleCancelParams": "contract.methods.console",
    "ConsoleCancelResult": "contract.methods.console",
    "ConsoleCommandsParams": "contract.methods.console",
    "ConsoleCommandsResult": "contract.methods.console",
    "ConsoleRunParams": "contract.methods.console",
    "ConsoleRunResult": "contract.methods.console",
    "DELTA_INTERVAL_S": "contract.run",
    "ERROR_CODES": "contract.errors",
    "EVENT_TYPES": "contract.events",
    "EventsSinceParams": "contract.methods.replay",
    "EventsSinceResult": "contract.methods.replay",
    "GATEWAY_ERROR": "contract.errors",
    "GatewayError": "contract.errors",
    "GatewayShutdownParams": "contract.methods.lifecycle",
    "HTTP_STATUSES": "contract.routes",
    "INTERNAL_ERROR": "contract.errors",
    "INVALID_PARAMS": "contract.errors",
    "INVALID_REQUEST": "contract.errors",
    "MAX_HTTP_BODY_BYTES": "contract.limits",
    "MAX_LINE_BYTES": "contract.limits",
    "METHODS": "contract.methods",
    "METHODS_BY_NAME": "contract.methods",
    "METHOD_NOT_FOUND": "contract.errors",
    "Method": "contract.methods",
    "NOTIFICATIONS": "contract.methods",
    "Notification": "contract.methods",
    "PARSE_ERROR": "contract.errors",
    "PROTOCOL_VERSION": "contract.events",
    "PromptEditParams": "contract.methods.turns",
    "PromptEditResult": "contract.methods.turns",
    "PromptRemoveParams": "contract.methods.turns",
    "PromptRemoveResult": "contract.methods.turns",
    "PromptSteerParams": "contract.methods.turns",
    "PromptSubmitParams": "contract.methods.turns",
    "REPLAY_CAPACITY": "contract.limits",
    "ROUTES": "contract.routes",
    "RUN_EVENTS": "contract.run",
    "RUN_EVENT_OF": "contract.run",
    "Ready": "contract.methods.lifecycle",
    "HttpRoute": "contract.routes",
    "RunAccepted": "contract.routes",
    "RunEvent": "contract.run",
    "RunLine": "contract.run",
    "ServerStatusParams": "contract.methods.server",
    "SessionAgentsParams": "contract.methods.turns",
    "SessionAgentsResult": "contract.methods.turns",
    "SessionCompressParams": "contract.methods.turns",
    "SessionCreateParams": "contract.methods.sessions",
    "SessionCreateResult": "contract.methods.sessions",
    "SessionDeleteParams": "contract.methods.sessions",
    "SessionDeleteResult": "contract.methods.sessions",
    "SessionDiffParams": "contract.methods.sessions",
    "SessionInterruptParams": "contract.methods.turns",
    "SessionInterruptResult": "contract.methods.turns",
    "SessionListParams": "contract.methods.sessions",
    "SessionListResult": "contract.methods.sessions",
    "SessionQueueParams": "contract.methods.turns",
    "SessionQueueResult": "contract.methods.turns",
    "SessionRenameParams": "contract.methods.sessions",
    "SessionRenameResult": "contract.methods.sessions",
    "SessionResumeParams": "contract.methods.sessions",
    "SessionStarted": "contract.run",
    "SessionUndoParams": "contract.methods.sessions",
    "StopParams": "contract.methods.stop",
    "WireEvent": "contract.methods.replay",
    "WorkspaceFilesParams": "contract.methods.workspace",
    "WorkspaceFilesResult": "contract.methods.workspace",
}
"""Public name -> the module that defines it."""

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    """Import ``name`` from its module on first use.

    Raises:
        AttributeError: ``name`` is not one of the contract's public names.
    """
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
