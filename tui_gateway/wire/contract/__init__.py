"""The gateway contract on the wire: every method, notification, event payload and error code.

This package is the one source of truth: :mod:`tui_gateway.wire.dispatch` serves the methods
declared in :data:`METHODS`, :class:`tui_gateway.wire.client.RemoteGateway` calls them, and the
reference ``docs/protocol.md`` and the JSON Schema ``docs/protocol.schema.json`` are generated
from it by :mod:`tui_gateway.wire.contract_docs` (a test fails when they drift apart).

Every method's params and result are typed dataclasses, decoded strictly (an unknown or
mistyped member is an invalid-params error, ``-32602``). A stop always states who asks:
``session.interrupt``, ``compression.cancel`` and ``console.cancel`` carry one
``stop: {issuer, surface, reason}`` object (:class:`StopParams`), refused when the issuer does
not match the surface.

Its modules, one job each: :mod:`~.errors` (error codes), :mod:`~.limits` (sizes),
:mod:`~.stop` (the ``stop`` object), :mod:`~.sessions`, :mod:`~.turns`, :mod:`~.console` and
:mod:`~.lifecycle` (params and results by method group), :mod:`~.methods` (the method and
notification tables), :mod:`~.routes` (``desk serve``'s HTTP routes), :mod:`~.run` (the lines
of ``desk run --json``). Import the names from
here: ``from tui_gateway.wire import contract as c``.
"""

from __future__ import annotations

from contract.events import EVENT_TYPES, PROTOCOL_VERSION
from tui_gateway.wire.contract.console import (
    ConsoleCancelParams,
    ConsoleCancelResult,
    ConsoleCommandsParams,
    ConsoleCommandsResult,
    ConsoleRunParams,
    ConsoleRunResult,
)
from tui_gateway.wire.contract.errors import (
    ERROR_CODES,
    GATEWAY_ERROR,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
)
from tui_gateway.wire.contract.lifecycle import GatewayShutdownParams, Ready
from tui_gateway.wire.contract.limits import MAX_HTTP_BODY_BYTES, MAX_LINE_BYTES, REPLAY_CAPACITY
from tui_gateway.wire.contract.methods import (
    METHODS,
    METHODS_BY_NAME,
    NOTIFICATIONS,
    Method,
    Notification,
)
from tui_gateway.wire.contract.routes import HTTP_STATUSES, ROUTES, Route, RunAccepted
from tui_gateway.wire.contract.run import (
    DELTA_INTERVAL_S,
    RUN_EVENT_OF,
    RUN_EVENTS,
    RunEvent,
    RunLine,
    SessionStarted,
)
from tui_gateway.wire.contract.server import ServerStatusParams
from tui_gateway.wire.contract.sessions import (
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
from tui_gateway.wire.contract.stop import StopParams
from tui_gateway.wire.contract.turns import (
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
from tui_gateway.wire.contract.workspace import WorkspaceFilesParams, WorkspaceFilesResult

__all__ = [
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
