"""Typed provider errors, each with a one-line human message.

Every failure the client can meet becomes one of these, so the desk can show a single clear
line in the transcript instead of a traceback.
"""

from __future__ import annotations


class ProviderError(Exception):
    """Base of every provider failure.

    Attributes:
        message: one line a person can read, e.g. ``model server refused the connection``.
        status: the HTTP status, when there was a response.
    """

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


class ConnectFailed(ProviderError):
    """The model server could not be reached (refused, unknown host, connect timeout)."""


class AuthError(ProviderError):
    """HTTP 401 or 403: the API key is missing, wrong, or lacks permission."""


class ModelNotFound(ProviderError):
    """The server does not serve the requested model (HTTP 404 naming the model)."""


class BadRequest(ProviderError):
    """Any other HTTP 4xx: the server rejected the request."""


class RateLimited(ProviderError):
    """HTTP 429.

    Attributes:
        retry_after: seconds the server asked to wait (``Retry-After``), or None.
    """

    def __init__(self, message: str, *, retry_after: float | None, status: int = 429) -> None:
        super().__init__(message, status=status)
        self.retry_after = retry_after


class ServerError(ProviderError):
    """HTTP 5xx: the server failed while handling the request."""


class MalformedChunk(ProviderError):
    """A streamed chunk (or a non-streamed body) was not valid JSON of the expected shape."""


class EarlyClose(ProviderError):
    """The server closed the stream before sending a ``finish_reason``."""
