"""Type checkers read this; at run time the face imports each name on first use."""

from __future__ import annotations

from agent.provider.client import (
    ChatClient,
)
from agent.provider.config import (
    ProviderConfig,
)
from agent.provider.errors import (
    AuthError,
    BadRequest,
    ConnectFailed,
    ContextOverflow,
    EarlyClose,
    MalformedChunk,
    ModelNotFound,
    ProviderError,
    RateLimited,
    RequestTooLarge,
    ServerError,
)
from agent.provider.types import (
    ChatMessage,
    Completion,
    StreamDelta,
    ToolCall,
    Usage,
)

__all__ = [
    "AuthError",
    "BadRequest",
    "ChatClient",
    "ChatMessage",
    "Completion",
    "ConnectFailed",
    "ContextOverflow",
    "EarlyClose",
    "MalformedChunk",
    "ModelNotFound",
    "ProviderConfig",
    "ProviderError",
    "RateLimited",
    "RequestTooLarge",
    "ServerError",
    "StreamDelta",
    "ToolCall",
    "Usage",
]
