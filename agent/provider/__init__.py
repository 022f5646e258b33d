"""OpenAI-compatible chat client over httpx (``/v1/chat/completions``)."""

from __future__ import annotations

from agent.faces import lazy_names

__all__, __getattr__ = lazy_names(
    __name__,
    {
        "AuthError": "agent.provider.errors",
        "BadRequest": "agent.provider.errors",
        "ChatClient": "agent.provider.client",
        "ChatMessage": "agent.provider.types",
        "Completion": "agent.provider.types",
        "ConnectFailed": "agent.provider.errors",
        "ContextOverflow": "agent.provider.errors",
        "EarlyClose": "agent.provider.errors",
        "MalformedChunk": "agent.provider.errors",
        "ModelNotFound": "agent.provider.errors",
        "ProviderConfig": "agent.provider.config",
        "ProviderError": "agent.provider.errors",
        "RateLimited": "agent.provider.errors",
        "RequestTooLarge": "agent.provider.errors",
        "ServerError": "agent.provider.errors",
        "StreamDelta": "agent.provider.types",
        "ToolCall": "agent.provider.types",
        "Usage": "agent.provider.types",
    },
)
