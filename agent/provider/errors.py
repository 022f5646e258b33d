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


class ContextOverflow(BadRequest):
    """The server refused the request because it does not fit the context window.

    Parsed from llama.cpp's, vLLM's, OpenAI's and TGI's phrasings
    (:mod:`agent.provider.overflow`); the counts are the server's own, None where it gave none.

    Attributes:
        prompt_tokens: the prompt's size by the server's count.
        window: the server's context window.
        completion_tokens: the reply tokens the request asked room for, where said.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int = 400,
        prompt_tokens: int | None = None,
        window: int | None = None,
        completion_tokens: int | None = None,
    ) -> None:
        super().__init__(message, status=status)
        self.prompt_tokens = prompt_tokens
        self.window = window
        self.completion_tokens = completion_tokens


class RequestTooLarge(ProviderError):
    """desk did not send a request that cannot fit the context window (nothing was sent).

    Attributes:
        prompt_tokens: the prompt's size by desk's calibrated count.
        reply_tokens: the room desk keeps for the reply.
        window: the context window.
    """

    def __init__(self, *, prompt_tokens: int, reply_tokens: int, window: int) -> None:
        message = (
            f"not sent: the prompt needs about {prompt_tokens:,} tokens and the reply "
            f"{reply_tokens:,}, but the context window is {window:,}; send a shorter prompt, "
            "start a new session (/new), or set a larger context_window"
        )
        super().__init__(message)
        self.prompt_tokens = prompt_tokens
        self.reply_tokens = reply_tokens
        self.window = window


class RateLimited(ProviderError):
    """HTTP 429.

    Attributes:
        retry_after: seconds the server asked to wait (``Retry-After``), or None.
    """

    def __init__(self, message: str, *, retry_after: float | None, status: int = 429) -> None:
        super().__init__(message, status=status)
        self.retry_after = retry_after


class ServerError(ProviderError):
    """HTTP 5xx: the server failed while handling the request.

    Attributes:
        retry_after: seconds a 503 asked to wait (``Retry-After``), or None.
    """

    def __init__(
        self, message: str, *, status: int | None = None, retry_after: float | None = None
    ) -> None:
        super().__init__(message, status=status)
        self.retry_after = retry_after


class MalformedChunk(ProviderError):
    """A streamed chunk (or a non-streamed body) was not valid JSON of the expected shape."""


class EarlyClose(ProviderError):
    """The server closed the stream before sending a ``finish_reason``."""
