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

This face re-exports the wire's names: ``import contract as c``. A new method's params and
result are read from its group module (``contract.methods.turns``...), not from here.
"""

from __future__ import annotations

from contract.errors import (
    ERROR_CODES,
    GATEWAY_ERROR,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    GatewayError,
)
from contract.events import EVENT_TYPES, PROTOCOL_VERSION
from contract.limits import MAX_HTTP_BODY_BYTES, MAX_LINE_BYTES, REPLAY_CAPACITY
from contract.methods import (
    METHODS,
    METHODS_BY_NAME,
    NOTIFICATIONS,
    Method,
    Notification,
)
from contract.methods.console import (
    ConsoleCancelParams,
    ConsoleCancelResult,
    ConsoleCommandsParams,
    ConsoleCommandsResult,
    ConsoleRunParams,
    ConsoleRunResult,
)
from contract.methods.lifecycle import GatewayShutdownParams, Ready
from contract.methods.server import ServerStatusParams
from contract.methods.sessions import (
    EventsSinceParams,
    EventsSinceResult,
    SessionCreateParams,
    SessionCreateResult,
    SessionDeleteParams,
    SessionDeleteResult,
    SessionDiffParams,
    SessionListParams,
    SessionListResult,
    SessionRenameParams,
    SessionRenameResult,
    SessionResumeParams,
    SessionUndoParams,
    WireEvent,
)
from contract.methods.stop import StopParams
from contract.methods.turns import (
    ApprovalRespondParams,
    ApprovalRespondResult,
    CompressionCancelParams,
    CompressionCancelResult,
    PromptEditParams,
    PromptEditResult,
    PromptRemoveParams,
    PromptRemoveResult,
    PromptSteerParams,
    PromptSubmitParams,
    SessionAgentsParams,
    SessionAgentsResult,
    SessionCompressParams,
    SessionInterruptParams,
    SessionInterruptResult,
    SessionQueueParams,
    SessionQueueResult,
)
from contract.methods.workspace import WorkspaceFilesParams, WorkspaceFilesResult
from contract.routes import HTTP_STATUSES, ROUTES, Route, RunAccepted
from contract.run import (
    DELTA_INTERVAL_S,
    RUN_EVENT_OF,
    RUN_EVENTS,
    RunEvent,
    RunLine,
    SessionStarted,
)

__all__ = [
    "GatewayError",
    "DELTA_INTERVAL_S",
    "RUN_EVENTS",
    "RUN_EVENT_OF",
    "RunEvent",
    "RunLine",
    "SessionStarted",
    "ServerStatusParams",
    "WorkspaceFilesParams",
    "WorkspaceFilesResult",
    "ERROR_CODES",
    "EVENT_TYPES",
    "GATEWAY_ERROR",
    "HTTP_STATUSES",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "MAX_HTTP_BODY_BYTES",
    "MAX_LINE_BYTES",
    "METHODS",
    "METHODS_BY_NAME",
    "METHOD_NOT_FOUND",
    "NOTIFICATIONS",
    "PARSE_ERROR",
    "PROTOCOL_VERSION",
    "REPLAY_CAPACITY",
    "ROUTES",
    "ApprovalRespondParams",
    "ApprovalRespondResult",
    "CompressionCancelParams",
    "CompressionCancelResult",
    "ConsoleCancelParams",
    "ConsoleCancelResult",
    "ConsoleCommandsParams",
    "ConsoleCommandsResult",
    "ConsoleRunParams",
    "ConsoleRunResult",
    "EventsSinceParams",
    "EventsSinceResult",
    "GatewayShutdownParams",
    "Method",
    "Notification",
    "PromptEditParams",
    "PromptEditResult",
    "PromptRemoveParams",
    "PromptRemoveResult",
    "PromptSteerParams",
    "PromptSubmitParams",
    "Ready",
    "Route",
    "RunAccepted",
    "SessionAgentsParams",
    "SessionAgentsResult",
    "SessionCompressParams",
    "SessionCreateParams",
    "SessionCreateResult",
    "SessionDeleteParams",
    "SessionDeleteResult",
    "SessionDiffParams",
    "SessionInterruptParams",
    "SessionInterruptResult",
    "SessionQueueParams",
    "SessionQueueResult",
    "SessionListParams",
    "SessionListResult",
    "SessionRenameParams",
    "SessionRenameResult",
    "SessionResumeParams",
    "SessionUndoParams",
    "StopParams",
    "WireEvent",
]
