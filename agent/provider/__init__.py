"""OpenAI-compatible chat client over httpx (``/v1/chat/completions``)."""

from agent.provider.client import ChatClient, ProviderConfig
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
from agent.provider.types import ChatMessage, Completion, StreamDelta, ToolCall, Usage

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
