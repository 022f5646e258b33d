from contract.errors import ERROR_CODES as ERROR_CODES
from contract.errors import GATEWAY_ERROR as GATEWAY_ERROR
from contract.errors import INTERNAL_ERROR as INTERNAL_ERROR
from contract.errors import INVALID_PARAMS as INVALID_PARAMS
from contract.errors import INVALID_REQUEST as INVALID_REQUEST
from contract.errors import METHOD_NOT_FOUND as METHOD_NOT_FOUND
from contract.errors import PARSE_ERROR as PARSE_ERROR
from contract.errors import GatewayError as GatewayError
from contract.events import EVENT_TYPES as EVENT_TYPES
from contract.events import PROTOCOL_VERSION as PROTOCOL_VERSION
from contract.limits import MAX_HTTP_BODY_BYTES as MAX_HTTP_BODY_BYTES
from contract.limits import MAX_LINE_BYTES as MAX_LINE_BYTES
from contract.limits import REPLAY_CAPACITY as REPLAY_CAPACITY
from contract.methods import METHODS as METHODS
from contract.methods import METHODS_BY_NAME as METHODS_BY_NAME
from contract.methods import NOTIFICATIONS as NOTIFICATIONS
from contract.methods import Method as Method
from contract.methods import Notification as Notification
from contract.methods.console import ConsoleCancelParams as ConsoleCancelParams
from contract.methods.console import ConsoleCancelResult as ConsoleCancelResult
from contract.methods.console import ConsoleCommandsParams as ConsoleCommandsParams
from contract.methods.console import ConsoleCommandsResult as ConsoleCommandsResult
from contract.methods.console import ConsoleRunParams as ConsoleRunParams
from contract.methods.console import ConsoleRunResult as ConsoleRunResult
from contract.methods.lifecycle import GatewayShutdownParams as GatewayShutdownParams
from contract.methods.lifecycle import Ready as Ready
from contract.methods.replay import EventsSinceParams as EventsSinceParams
from contract.methods.replay import EventsSinceResult as EventsSinceResult
from contract.methods.replay import WireEvent as WireEvent
from contract.methods.server import ServerStatusParams as ServerStatusParams
from contract.methods.sessions import SessionCreateParams as SessionCreateParams
from contract.methods.sessions import SessionCreateResult as SessionCreateResult
from contract.methods.sessions import SessionDeleteParams as SessionDeleteParams
from contract.methods.sessions import SessionDeleteResult as SessionDeleteResult
from contract.methods.sessions import SessionDiffParams as SessionDiffParams
from contract.methods.sessions import SessionListParams as SessionListParams
from contract.methods.sessions import SessionListResult as SessionListResult
from contract.methods.sessions import SessionRenameParams as SessionRenameParams
from contract.methods.sessions import SessionRenameResult as SessionRenameResult
from contract.methods.sessions import SessionResumeParams as SessionResumeParams
from contract.methods.sessions import SessionUndoParams as SessionUndoParams
from contract.methods.stop import StopParams as StopParams
from contract.methods.turns import ApprovalRespondParams as ApprovalRespondParams
from contract.methods.turns import ApprovalRespondResult as ApprovalRespondResult
from contract.methods.turns import CompressionCancelParams as CompressionCancelParams
from contract.methods.turns import CompressionCancelResult as CompressionCancelResult
from contract.methods.turns import PromptEditParams as PromptEditParams
from contract.methods.turns import PromptEditResult as PromptEditResult
from contract.methods.turns import PromptRemoveParams as PromptRemoveParams
from contract.methods.turns import PromptRemoveResult as PromptRemoveResult
from contract.methods.turns import PromptSteerParams as PromptSteerParams
from contract.methods.turns import PromptSubmitParams as PromptSubmitParams
from contract.methods.turns import SessionAgentsParams as SessionAgentsParams
from contract.methods.turns import SessionAgentsResult as SessionAgentsResult
from contract.methods.turns import SessionCompressParams as SessionCompressParams
from contract.methods.turns import SessionInterruptParams as SessionInterruptParams
from contract.methods.turns import SessionInterruptResult as SessionInterruptResult
from contract.methods.turns import SessionQueueParams as SessionQueueParams
from contract.methods.turns import SessionQueueResult as SessionQueueResult
from contract.methods.workspace import WorkspaceFilesParams as WorkspaceFilesParams
from contract.methods.workspace import WorkspaceFilesResult as WorkspaceFilesResult
from contract.routes import HTTP_STATUSES as HTTP_STATUSES
from contract.routes import ROUTES as ROUTES
from contract.routes import HttpRoute as HttpRoute
from contract.routes import RunAccepted as RunAccepted
from contract.run import DELTA_INTERVAL_S as DELTA_INTERVAL_S
from contract.run import RUN_EVENT_OF as RUN_EVENT_OF
from contract.run import RUN_EVENTS as RUN_EVENTS
from contract.run import RunEvent as RunEvent
from contract.run import RunLine as RunLine
from contract.run import SessionStarted as SessionStarted

__all__ = [
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
    "DELTA_INTERVAL_S",
    "ERROR_CODES",
    "EVENT_TYPES",
    "EventsSinceParams",
    "EventsSinceResult",
    "GATEWAY_ERROR",
    "GatewayError",
    "GatewayShutdownParams",
    "HTTP_STATUSES",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "MAX_HTTP_BODY_BYTES",
    "MAX_LINE_BYTES",
    "METHODS",
    "METHODS_BY_NAME",
    "METHOD_NOT_FOUND",
    "Method",
    "NOTIFICATIONS",
    "Notification",
    "PARSE_ERROR",
    "PROTOCOL_VERSION",
    "PromptEditParams",
    "PromptEditResult",
    "PromptRemoveParams",
    "PromptRemoveResult",
    "PromptSteerParams",
    "PromptSubmitParams",
    "REPLAY_CAPACITY",
    "ROUTES",
    "RUN_EVENTS",
    "RUN_EVENT_OF",
    "Ready",
    "HttpRoute",
    "RunAccepted",
    "RunEvent",
    "RunLine",
    "ServerStatusParams",
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
    "SessionListParams",
    "SessionListResult",
    "SessionQueueParams",
    "SessionQueueResult",
    "SessionRenameParams",
    "SessionRenameResult",
    "SessionResumeParams",
    "SessionStarted",
    "SessionUndoParams",
    "StopParams",
    "WireEvent",
    "WorkspaceFilesParams",
    "WorkspaceFilesResult",
]
